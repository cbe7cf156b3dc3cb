--[[
  Consumes the global rate limit and, within the budget, reads the mailbox.

  Input:
    KEYS[1] the limiter's key (consume-global-limit)
    KEYS[2] the mailbox
    ARGV[1] the budget, ARGV[2] the window in seconds (consume-global-limit)
  Output:
    {consumed, ttl} when over the budget, else {consumed, ttl, the record or nil}
]]
--- @include "../../core/limits/lua/includes/consume-global-limit"
return {consumed, ttl, redis.call('GET', KEYS[2])}
