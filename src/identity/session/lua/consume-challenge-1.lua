--[[
  Exchanges a session challenge once: it is marked `used` (keeping its expiry) only when it was issued for what
  the exchange claims.

  Input:
    KEYS[1] the challenge
    ARGV[1] what the exchange claims it was issued for: `<kind>:<side>`
  Output:
    'ok' (consumed now), 'absent' (expired or never issued), 'other' (issued for another kind or side),
    'used' (already exchanged)
]]
local issued = redis.call('GET', KEYS[1])
if not issued then return 'absent' end
if issued == 'used' then return 'used' end
if issued ~= ARGV[1] then return 'other' end
redis.call('SET', KEYS[1], 'used', 'KEEPTTL')
return 'ok'
