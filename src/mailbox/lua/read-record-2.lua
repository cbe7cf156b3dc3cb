--[[
  Reads the mailbox and its record's receipt.

  Input:
    KEYS[1] the mailbox, KEYS[2] the pair's receipts (same slot)
    ARGV[1] … the ids the request's If-None-Match names (record-and-receipt)
  Output:
    record-and-receipt's found, or nil when the mailbox is empty
]]
local first, arg = 1, 0
--- @include "includes/record-and-receipt"
return found
