--[[
  Acknowledges a record: the first ack stores its receipt and publishes the `delivered` notice; a later one
  answers the first receipt and stores and publishes nothing. Only a retained, unexpired record of an allowed
  direction can be acknowledged.

  Input:
    KEYS[1] the pair's receipts
    KEYS[2] the key direction's stream, KEYS[3] the wallet direction's (same slot)
    ARGV[1] the record id
    ARGV[2] the directions searched: 'key', 'wallet' or 'both'
    ARGV[3] the receipt's `at` (ISO-8601 UTC, ms)
    ARGV[4] the receipts' TTL in seconds, ARGV[5] the records' lifetime in milliseconds
    ARGV[6] most records searched per direction
    ARGV[7] the channel of the notice for a record to the key (the wallet path's room), ARGV[8] for a record to
            the wallet (the key path's); '' when the caller publishes (a cluster: the channel is in another slot)
    ARGV[9] the pair's wkIdentity, ARGV[10] the notice's header (the event follows it)
  Output:
    {0} when no such record; else {1 when stored or 2 when acknowledged before, the receipt JSON, the target
    side, the record's action, epoch, offset, the `delivered` event's JSON}
]]
local id = ARGV[1]
local now = redis.call('TIME')
local since = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) - tonumber(ARGV[5])
local prefix = '{"id":"' .. id .. '",'
local found, side
for i, direction in ipairs({'key', 'wallet'}) do
  if ARGV[2] == direction or ARGV[2] == 'both' then
    local last = '+'
    for _ = 1, tonumber(ARGV[6]) do
      local entry = redis.call('XREVRANGE', KEYS[i + 1], last, string.format('%d', since + 1), 'COUNT', 1)[1]
      if not entry then break end
      local record = entry[2][4]
      if string.sub(record, 1, #prefix) == prefix then
        found, side = record, direction
        break
      end
      last = '(' .. entry[1]
    end
  end
  if found then break end
end
if not found then return {0} end
local action = string.match(found, '"action":"([A-Za-z0-9_:-]+)"')
local epoch, offset = string.match(found, ',"epoch":"([A-Za-z0-9_-]+)","offset":(%d+)}$')
local receipt = '{"side":"' .. side .. '","at":"' .. ARGV[3] .. '"}'
local status = 1
if redis.call('HSETNX', KEYS[1], id, receipt) == 0 then
  status = 2
  receipt = redis.call('HGET', KEYS[1], id)
else
  redis.call('EXPIRE', KEYS[1], ARGV[4])
end
local at = string.match(receipt, '"at":"([^"]+)"')
local event = '{"wkIdentity":"' .. ARGV[9] .. '","id":"' .. id .. '","action":"' .. action .. '","epoch":"' .. epoch ..
  '","offset":' .. offset .. ',"side":"' .. side .. '","at":"' .. at .. '"}'
local channel = side == 'key' and ARGV[7] or ARGV[8]
if status == 1 and channel ~= '' then redis.call('SPUBLISH', channel, ARGV[10] .. event) end
return {status, receipt, side, action, epoch, tonumber(offset), event}
