--[[
  Writes one pod's counts of a side's sockets in a pair room, as they are (not a change: a write lost or applied
  twice is put right by the next one), and returns the side's whole presence.

  Input:
    KEYS[1] the side's presence hash
    ARGV[1] the pod id
    ARGV[2] the pod's joined sockets (≥ 0)
    ARGV[3] the pod's ack-capable sockets (≥ 0)
    ARGV[4] seconds the hash is kept after this write
    ARGV[5] when the pod's joined sockets last fell (ms, the pod's clock): when this write lowers them, `lastSeen`
            becomes that time (never later than Redis's) unless it holds a later one; '' when lastSeen is not kept
  Output:
    {the pod's joined sockets before this write, then the hash after it as HGETALL gives it (field, value, …)};
    `lastSeen` in ms
]]
local joinedField = 'j:' .. ARGV[1]
local before = tonumber(redis.call('HGET', KEYS[1], joinedField)) or 0
local function put(field, count)
  if count > 0 then redis.call('HSET', KEYS[1], field, count) else redis.call('HDEL', KEYS[1], field) end
end
local joined = tonumber(ARGV[2])
put(joinedField, joined)
put('a:' .. ARGV[1], tonumber(ARGV[3]))
if joined < before and ARGV[5] ~= '' then
  local now = redis.call('TIME')
  local left = math.min(tonumber(ARGV[5]), tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000))
  if left > (tonumber(redis.call('HGET', KEYS[1], 'lastSeen')) or 0) then
    redis.call('HSET', KEYS[1], 'lastSeen', left)
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('EXPIRE', KEYS[1], ARGV[4]) end
local reply = redis.call('HGETALL', KEYS[1])
table.insert(reply, 1, before)
return reply
