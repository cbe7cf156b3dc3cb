--[[
  Acknowledges a record of the pair (includes/acknowledge): where the caller spent the ack's budget itself or it
  has none.

  Input:
    KEYS[1] the pair's receipts, KEYS[2] the key direction's stream, KEYS[3] the wallet direction's (same slot)
    ARGV[1] … ARGV[10] as the fragment's ARGV[arg + 1] … ARGV[arg + 10]
  Output:
    the fragment's reply
]]
local first, arg = 1, 0
--- @include "includes/acknowledge"
return acknowledge()
