--[[
  Consumes the global rate limit and, within the budget, reads the sync record: deleted on the first read with
  no grace period, else its grace period started (read-with-grace).

  Input:
    KEYS[1] the limiter's key (consume-global-limit)
    KEYS[2] the sync record
    ARGV[1] the budget, ARGV[2] the window in seconds (consume-global-limit)
    ARGV[3] the grace period in seconds, 0 to delete on the first read
  Output:
    {consumed, ttl} when over the budget, else {consumed, ttl, the record or nil}
]]
--- @include "../../core/limits/lua/includes/consume-global-limit"
--- @include "includes/read-with-grace"
if tonumber(ARGV[3]) == 0 then return {consumed, ttl, redis.call('GETDEL', KEYS[2])} end
return {consumed, ttl, readWithGrace(KEYS[2], ARGV[3])}
