--[[
  Sets a subject side's revocation stamp: the Redis time in ms, strictly above the previous stamp, so every
  token issued before it (which carries an older stamp, or none) is refused.

  Input:
    KEYS[1] the subject side's revocation stamp
    ARGV[1] how long it is kept, in ms (longer than any token it refuses can live)
  Output:
    the new stamp
]]
local t = redis.call('TIME')
local stamp = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local previous = tonumber(redis.call('GET', KEYS[1]) or '0')
if stamp <= previous then stamp = previous + 1 end
redis.call('SET', KEYS[1], stamp, 'PX', ARGV[1])
return stamp
