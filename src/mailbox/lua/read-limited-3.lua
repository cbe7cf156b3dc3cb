--[[
  Consumes the global rate limit and, within the budget, reads the mailbox and its record's receipt.

  Input:
    KEYS[1] the limiter's key (consume-global-limit)
    KEYS[2] the mailbox, KEYS[3] the pair's receipts (same slot)
    ARGV[1] the budget, ARGV[2] the window in seconds (consume-global-limit)
    ARGV[3] … the ids the request's If-None-Match names (record-and-receipt)
  Output:
    {consumed, ttl} when over the budget, else {consumed, ttl, record-and-receipt's found or nil}
]]
--- @include "../../core/limits/lua/includes/consume-global-limit"
local first, arg = 2, 2
--- @include "includes/record-and-receipt"
return {consumed, ttl, found}
