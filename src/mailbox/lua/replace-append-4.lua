--[[
  Replaces the mailbox, keeps its verified mark true (set only while it holds a request a verified write stored)
  and, for a record with a direction, appends it to that direction's stream under the next offset, in the same
  step: the stored record carries its epoch and offset.

  Input:
    KEYS[1] the mailbox
    KEYS[2] its verified mark (same slot)
    KEYS[3] the direction's stream (same slot)
    KEYS[4] the direction's metadata: epoch, offset, bytes, sizes (same slot)
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
  local meta = redis.call('HMGET', KEYS[4], 'epoch', 'offset', 'sizes')
  local epoch, offset, sizes = meta[1], 1, {}
  if epoch then
    offset = tonumber(meta[2]) + 1
    for size in string.gmatch(meta[3] or '', '%d+') do sizes[#sizes + 1] = tonumber(size) end
  else
    -- The position was lost: records still held belong to no epoch a client can name.
    epoch = ARGV[4]
    redis.call('DEL', KEYS[3])
  end
  record = record .. ',"epoch":"' .. epoch .. '","offset":' .. string.format('%d', offset) .. '}'
  -- The sizes of the entries the stream still holds are the last XLEN ones (an expired stream holds none).
  local first = math.max(1, #sizes - redis.call('XLEN', KEYS[3]) + 1)
  sizes[#sizes + 1] = #record
  local bytes = 0
  for i = first, #sizes do bytes = bytes + sizes[i] end
  while #sizes - first + 1 > tonumber(ARGV[5]) or (bytes > tonumber(ARGV[6]) and first < #sizes) do
    bytes = bytes - sizes[first]
    first = first + 1
  end
  redis.call('XADD', KEYS[3], 'MAXLEN', #sizes - first + 1, '*', 'offset', offset, 'record', record)
  redis.call('EXPIRE', KEYS[3], ARGV[2])
  redis.call('HSET', KEYS[4], 'epoch', epoch, 'offset', offset, 'bytes', bytes,
    'sizes', table.concat(sizes, ',', first))
  redis.call('EXPIRE', KEYS[4], ARGV[7])
  position = {epoch, offset}
end
redis.call('SET', KEYS[1], record, 'EX', ARGV[2])
if ARGV[3] == 'verified-request' then redis.call('SET', KEYS[2], '1', 'EX', ARGV[2]) else redis.call('DEL', KEYS[2]) end
return position
