--[[
  Replaces the mailbox and keeps its verified mark true: set only while it holds a request a verified write stored.

  Input:
    KEYS[1] the mailbox
    KEYS[2] its verified mark (same slot)
    ARGV[1] the record
    ARGV[2] its TTL in seconds
    ARGV[3] 'verified-request' (a signed write of a key-bound type: marks it), 'unguarded' (an unsigned write no
            pin can guard: refused while a verified request is pending) or 'plain'
  Output:
    1 once stored, 0 when an unguarded write found a verified request pending
]]
if ARGV[3] == 'unguarded' and redis.call('EXISTS', KEYS[2]) == 1 and redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
if ARGV[3] == 'verified-request' then redis.call('SET', KEYS[2], '1', 'EX', ARGV[2]) else redis.call('DEL', KEYS[2]) end
return 1
