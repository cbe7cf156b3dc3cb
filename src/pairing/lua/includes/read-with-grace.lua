--[[
  The first read cuts the record's remaining lifetime to the grace period, never lengthening it (EXPIRE … LT,
  Redis 7: a key without expiry counts as expiring never, so it gets the grace too).

  Declares: readWithGrace(key, grace), the record at `key` or nil, its lifetime cut to `grace` seconds.
  Input: none of its own (the including script passes its KEYS and ARGV).
  Output: none (the including script returns).
]]
local function readWithGrace(key, grace)
  local value = redis.call('GET', key)
  if value then redis.call('EXPIRE', key, grace, 'LT') end
  return value
end
