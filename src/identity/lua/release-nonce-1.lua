--[[
  Deletes a spent nonce only while it still holds this request's value: a request gives back its own nonce,
  never another's.

  Input:
    KEYS[1] the nonce's key
    ARGV[1] the value this request's spend stored
  Output:
    1 when deleted, 0 when the nonce holds another value or is gone
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
