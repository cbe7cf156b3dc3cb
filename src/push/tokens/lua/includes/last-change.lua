--[[
  Shared by both pair scripts: the epoch of the last change a pair's set applied to a token (claim-owner-2.lua).

  Declares: lastChange(live, gone, token), that epoch or nil; TOMBSTONE_MS, how long a tombstone set remembers
  removals.
  Input: none of its own (the including script passes its KEYS and ARGV).
  Output: none (the including script returns).
]]
local TOMBSTONE_MS = 3600000
local function lastChange(live, gone, token)
  local added, removed = redis.call('ZSCORE', live, token), redis.call('ZSCORE', gone, token)
  if added and removed then return math.max(tonumber(added), tonumber(removed)) end
  return tonumber(added or removed)
end
