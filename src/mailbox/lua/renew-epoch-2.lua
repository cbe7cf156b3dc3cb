--[[
  A pod delivered a direction's record at an offset that Redis no longer holds as it was (a failover lost the
  appends that reached it): draws a new epoch, so the lost offsets are never reused under the old one. Only while
  the metadata still holds the epoch the pod delivered in and either an offset below the one delivered or, at that
  offset, another record than the one delivered.

  Input:
    KEYS[1] the direction's stream
    KEYS[2] its metadata (same slot)
    ARGV[1] the epoch the pod delivered in
    ARGV[2] the highest offset it delivered in it
    ARGV[3] the id of the record it delivered at that offset ('' when it does not know it)
    ARGV[4] the new epoch
    ARGV[5] the metadata's TTL in seconds
    ARGV[6] most records the stream holds
  Output:
    1 when the position in ARGV[1] is lost (renewed now, or the metadata holds another epoch or none); 0 when it
    stands
]]
local meta = redis.call('HMGET', KEYS[2], 'epoch', 'offset')
if meta[1] ~= ARGV[1] then return 1 end
local delivered = tonumber(ARGV[2])
local lost = tonumber(meta[2]) < delivered
if not lost and ARGV[3] ~= '' then
  local head = '{"id":"' .. ARGV[3] .. '"'
  for _, entry in ipairs(redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', ARGV[6])) do
    if tonumber(entry[2][2]) == delivered then
      lost = string.sub(entry[2][4], 1, #head) ~= head
      break
    end
  end
end
if not lost then return 0 end
-- The records still held belong to the old epoch, which no client can resume any more: the next append starts an
-- empty stream at offset 1.
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('HSET', KEYS[2], 'epoch', ARGV[4], 'offset', 0)
redis.call('EXPIRE', KEYS[2], ARGV[5])
return 1
