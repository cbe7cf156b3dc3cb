--[[
  Reads the mailbox and its record's receipt.

  Input:
    KEYS[1] the mailbox, KEYS[2] the pair's receipts (same slot)
  Output:
    {the record, its receipt or nil}, or nil when the mailbox is empty
]]
local first = 1
--- @include "includes/record-and-receipt"
return found
