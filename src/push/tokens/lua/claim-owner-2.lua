--[[
  Claims a token's owner entry for a pair and draws the move's epoch.

  Every change to a token's place is stamped with a move epoch, drawn here: greater than the token's previous
  epoch and, after the entry expired, than any epoch still remembered (it is at least the claim's Redis TIME in
  ms). A pair's set applies a change to a token only if its epoch is newer than the last change it applied to
  that token: the live set's score is the epoch the token was added with, and a tombstone set remembers removals
  for an hour (far longer than any request lives). So the steps of concurrent moves may reach the sets in any
  order and each set still ends as the latest move left it.

  Input:
    KEYS[1] the token's owner entry
    KEYS[2] the token's epoch
    ARGV[1] the claiming pair's identity
    ARGV[2] the TTL of both, in seconds
  Output:
    {the previous owner or '', the epoch}
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local epoch = math.max(now, tonumber(redis.call('GET', KEYS[2]) or '0') + 1)
local previous = redis.call('GET', KEYS[1]) or ''
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
redis.call('SET', KEYS[2], string.format('%.0f', epoch), 'EX', ARGV[2])
return { previous, epoch }
