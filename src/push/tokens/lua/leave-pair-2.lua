--[[
  The old pair's part of a move: the token leaves its set unless a newer change (a move back) reached it first.

  Input:
    KEYS[1] the old pair's live set for the token's side
    KEYS[2] its tombstone set
    ARGV[1] the token
    ARGV[2] the move's epoch
  Output:
    1 when the token left the set, 0 when a newer change had reached it
]]
--- @include "includes/last-change"
local epoch = tonumber(ARGV[2])
local last = lastChange(KEYS[1], KEYS[2], ARGV[1])
if last and epoch <= last then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], epoch, ARGV[1])
redis.call('PEXPIRE', KEYS[2], TOMBSTONE_MS)
return 1
