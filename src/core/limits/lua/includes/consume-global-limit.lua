--[[
  Consumes one point of a per-IP limit (the global one, or the socket joins' budget that acks draw on), with
  rate-limiter-flexible's RateLimiterRedis semantics on the same key: a counter that expires one window after its
  first point, so requests counted here and by the library draw on one budget; an INCR with the window set when
  the key has none does in two commands what the library's script does in three. Over the budget it
  returns before the including script's own work, which therefore changes nothing.

  Declares: consumed (the count after this point), ttl (milliseconds until the window resets).
  Input:
    KEYS[1] the limiter's key, <prefix>rl:<limiter>:<ip> (api, joins)
    ARGV[1] the budget (points per window)
    ARGV[2] the window in seconds
  Output:
    {consumed, ttl} when over the budget; otherwise it falls through to the including script, whose own keys
    start at KEYS[2], its arguments at ARGV[3], and which returns {consumed, ttl, <its result>}.
]]
local consumed = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -1 then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  ttl = 1000 * ARGV[2]
end
if consumed > tonumber(ARGV[1]) then return {consumed, ttl} end
