--[[
  Spends one point of the client's budget and, within it, acknowledges a record of the pair
  (includes/acknowledge): one round trip where the budget's key is on the pair's node (not a cluster). Over the
  budget nothing is stored.

  Input:
    KEYS[1] the budget's key (consume-global-limit)
    KEYS[2] the pair's receipts, KEYS[3] the key direction's stream, KEYS[4] the wallet direction's (same slot)
    ARGV[1] the budget, ARGV[2] its window in seconds (consume-global-limit)
    ARGV[3] … ARGV[12] as the fragment's ARGV[arg + 1] … ARGV[arg + 10]
  Output:
    {consumed, ttl} when over the budget, else {consumed, ttl, the fragment's reply}
]]
--- @include "../../core/limits/lua/includes/consume-global-limit"
local first, arg = 2, 2
--- @include "includes/acknowledge"
return {consumed, ttl, acknowledge()}
