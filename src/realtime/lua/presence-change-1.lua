--[[
  Counts one pod's change of a side's sockets in a pair room and returns the side's whole presence.

  Input:
    KEYS[1] the side's presence hash
    ARGV[1] the pod id
    ARGV[2] change of the pod's joined sockets (-1, 0, 1)
    ARGV[3] change of the pod's ack-capable sockets (-1, 0, 1)
    ARGV[4] seconds the hash is kept after this change
    ARGV[5] '1' when a socket leaving stamps `lastSeen`, '0' when lastSeen is not kept
  Output:
    the hash after the change, as HGETALL gives it (field, value, …); `lastSeen` in ms
]]
local function count(field, change)
  if change == 0 then return end
  if redis.call('HINCRBY', KEYS[1], field, change) <= 0 then redis.call('HDEL', KEYS[1], field) end
end
local joined = tonumber(ARGV[2])
count('j:' .. ARGV[1], joined)
count('a:' .. ARGV[1], tonumber(ARGV[3]))
if joined < 0 and ARGV[5] == '1' then
  local now = redis.call('TIME')
  redis.call('HSET', KEYS[1], 'lastSeen', tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000))
end
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('EXPIRE', KEYS[1], ARGV[4]) end
return redis.call('HGETALL', KEYS[1])
