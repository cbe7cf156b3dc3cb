--[[
  Reads the sync record, starting its grace period; one script, so concurrent reads on many pods all see the
  same record and the same expiry.

  Input:
    KEYS[1] the sync record
    ARGV[1] the grace period in seconds
  Output:
    the record or nil
]]
--- @include "includes/read-with-grace"
return readWithGrace(KEYS[1], ARGV[1])
