--[[
  Replaces the mailbox, keeps its verified mark true (set only while it holds a request a verified write stored)
  and, for a record with a direction, appends it to that direction's stream under the next offset, in the same
  step: the stored record carries its epoch and offset. Redis's Lua hashes every byte of every string it makes:
  besides its argument, the script makes one string of the record's size, the stored text (docs/benchmarks.md).

  Input:
    KEYS[1] the mailbox
    KEYS[2] its verified mark (same slot)
    KEYS[3] the direction's stream (same slot)
    KEYS[4] the direction's metadata: epoch, offset, bytes, recordbytes (same slot)
    ARGV[1] the record's JSON; for a record with a direction, without its closing brace
    ARGV[2] its TTL in seconds
    ARGV[3] 'verified-request' (a signed write of a key-bound type: marks it), 'unguarded' (an unsigned write no
            pin can guard: refused while a verified request is pending) or 'plain'
    ARGV[4] '' for a record without a direction; else the epoch to start when the direction has no position
    ARGV[5] records the stream keeps, ARGV[6] record bytes it keeps (the newest record is always kept)
    ARGV[7] the metadata's TTL in seconds
  Output:
    0 when an unguarded write found a verified request pending; else 1, or {epoch, offset} for a record with a
    direction
]]
if ARGV[3] == 'unguarded' and redis.call('EXISTS', KEYS[2]) == 1 and redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
local record = ARGV[1]
local position = 1
if ARGV[4] ~= '' then
  -- `recordbytes`: the byte size of each record the stream holds, oldest first, SIZE_WIDTH digits each.
  local SIZE_WIDTH = 10
  local meta = redis.call('HMGET', KEYS[4], 'epoch', 'offset', 'bytes', 'recordbytes')
  local epoch, offset, bytes, sizes = meta[1], 1, 0, ''
  -- The stream expires whole: EXPIRE renews it and answers whether it still holds the records `recordbytes` counts.
  local held = 0
  if epoch then
    offset = tonumber(meta[2]) + 1
    held = redis.call('EXPIRE', KEYS[3], ARGV[2])
    -- Metadata without `recordbytes` (an earlier build's) counts no record: the append keeps the new one only.
    if held == 1 and meta[4] then bytes, sizes = tonumber(meta[3]), meta[4] end
  else
    -- The position was lost: records still held belong to no epoch a client can name.
    epoch = ARGV[4]
    redis.call('DEL', KEYS[3])
  end
  record = record .. ',"epoch":"' .. epoch .. '","offset":' .. offset .. '}'
  sizes = sizes .. string.format('%0' .. SIZE_WIDTH .. 'd', #record)
  bytes = bytes + #record
  local count, length, maxBytes, dropped = #sizes / SIZE_WIDTH, tonumber(ARGV[5]), tonumber(ARGV[6]), 0
  while count - dropped > length or (bytes > maxBytes and dropped < count - 1) do
    bytes = bytes - tonumber(string.sub(sizes, dropped * SIZE_WIDTH + 1, (dropped + 1) * SIZE_WIDTH))
    dropped = dropped + 1
  end
  if dropped > 0 then sizes = string.sub(sizes, dropped * SIZE_WIDTH + 1) end
  redis.call('XADD', KEYS[3], 'MAXLEN', count - dropped, '*', 'offset', offset, 'record', record)
  if held == 0 then redis.call('EXPIRE', KEYS[3], ARGV[2]) end
  redis.call('HSET', KEYS[4], 'epoch', epoch, 'offset', offset, 'bytes', bytes, 'recordbytes', sizes)
  redis.call('EXPIRE', KEYS[4], ARGV[7])
  position = {epoch, offset}
end
redis.call('SET', KEYS[1], record, 'EX', ARGV[2])
if ARGV[3] == 'verified-request' then redis.call('SET', KEYS[2], '1', 'EX', ARGV[2]) else redis.call('DEL', KEYS[2]) end
return position
