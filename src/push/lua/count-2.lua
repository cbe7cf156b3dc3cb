--[[
  Counts a push job against its pair side's fixed one-minute window (the first push of a window starts its
  expiry). A job is counted once: its re-runs (after a rate limit, a release at shutdown, a retry) get the count
  of its first run.

  Input:
    KEYS[1] the side's counter for the current window
    KEYS[2] the job's remembered count
    ARGV[1] the window in milliseconds
    ARGV[2] how long the job's count is kept, in seconds
  Output:
    the job's count within its window
]]
local counted = redis.call('GET', KEYS[2])
if counted then return tonumber(counted) end
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
redis.call('SET', KEYS[2], count, 'EX', ARGV[2])
return count
