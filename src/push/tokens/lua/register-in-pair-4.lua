--[[
  The pair's own part of a registration, atomic across pods: both sides' live and tombstone sets (one hash tag),
  expired and capped.

  Input:
    KEYS[1] the key side's live set, KEYS[2] its tombstone set
    KEYS[3] the wallet side's live set, KEYS[4] its tombstone set
    ARGV[1] the key side's token ('' when absent), ARGV[2] its epoch
    ARGV[3] the wallet side's token ('' when absent), ARGV[4] its epoch
    ARGV[5] the cap per side
    ARGV[6] the TTL in seconds
  Output:
    {key side's count, wallet side's count, tokens the cap dropped per side (two lists)}: the dropped tokens'
    owner entries live in other slots and are released by the caller
]]
--- @include "includes/last-change"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local maxPerSide, ttl = tonumber(ARGV[5]), tonumber(ARGV[6])
local dropped = {}
for side = 1, 2 do
  local live, gone = KEYS[side * 2 - 1], KEYS[side * 2]
  local token, epoch = ARGV[side * 2 - 1], tonumber(ARGV[side * 2])
  dropped[side] = {}
  redis.call('ZREMRANGEBYSCORE', live, '-inf', now - ttl * 1000)
  redis.call('ZREMRANGEBYSCORE', gone, '-inf', now - TOMBSTONE_MS)
  if token ~= '' then
    local last = lastChange(live, gone, token)
    if not last or epoch > last then
      redis.call('ZADD', live, epoch, token)
      redis.call('ZREM', gone, token)
    end
    local excess = redis.call('ZCARD', live) - maxPerSide
    if excess > 0 then
      dropped[side] = redis.call('ZRANGE', live, 0, excess - 1)
      redis.call('ZREMRANGEBYRANK', live, 0, excess - 1)
    end
    redis.call('EXPIRE', live, ttl)
  end
end
return { redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[3]), dropped[1], dropped[2] }
