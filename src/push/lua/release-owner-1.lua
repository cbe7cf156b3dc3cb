--[[
  Deletes a token's owner entry only while it still names this pair: another pair may have claimed the token
  since. The epoch stays until it expires, so a later claim still draws a newer one.

  Input:
    KEYS[1] the token's owner entry
    ARGV[1] the pair's identity
  Output:
    1 when deleted, 0 when the entry names another pair or is gone
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
