--[[
  Pins a side of a pair, or renews its pin: a new pin holds its creation time, a renewal keeps it (the stamp a
  session token issued while pinned is bound to).

  Input:
    KEYS[1] the side's pin
    ARGV[1] the creation time, in ms
    ARGV[2] the pin's lifetime, in seconds
  Output:
    1 if the pin is new, 0 if it was renewed
]]
if redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2], 'NX') then return 1 end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 0
