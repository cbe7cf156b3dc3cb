--[[
  Deletes a key only while it still holds the caller's value (compare-and-delete): whoever set it may release it,
  never a value someone else has set since.

  Input:
    KEYS[1] the key
    ARGV[1] the value the caller set
  Output:
    1 when deleted, 0 when the key holds another value or is gone
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
