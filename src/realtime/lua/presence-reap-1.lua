--[[
  Drops the counts of pods found dead from a side's presence; the caller that drops joined sockets stamps
  `lastSeen` (the side's sockets on those pods left now).

  Input:
    KEYS[1] the side's presence hash
    ARGV[1] '1' when lastSeen is kept, '0' when not
    ARGV[2..] the dead pods' ids
  Output:
    {joined sockets dropped, then the hash after it as HGETALL gives it (field, value, …)}
]]
local dropped = 0
for i = 2, #ARGV do
  dropped = dropped + (tonumber(redis.call('HGET', KEYS[1], 'j:' .. ARGV[i])) or 0)
  redis.call('HDEL', KEYS[1], 'j:' .. ARGV[i], 'a:' .. ARGV[i])
end
if dropped > 0 and ARGV[1] == '1' then
  local now = redis.call('TIME')
  redis.call('HSET', KEYS[1], 'lastSeen', tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000))
end
local reply = redis.call('HGETALL', KEYS[1])
table.insert(reply, 1, dropped)
return reply
