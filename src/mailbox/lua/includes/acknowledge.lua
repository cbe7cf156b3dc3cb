--[[
  Acknowledges a record: the first ack stores its receipt and publishes the `delivered` notice; a later one
  answers the first receipt and stores and publishes nothing. Only a retained, unexpired record can be
  acknowledged, and only by its target side. A direction is searched newest first: an app acknowledges the record
  it just received, so the older records (up to STREAM_MAX_BYTES of them) are read only when that is not the one.

  Declares: find(stream, since, prefix, most), the record (text) with that id prefix or nil; acknowledge(), the
    reply below.
  Input: `first` and `arg`, set by the including script:
    KEYS[first] the pair's receipts
    KEYS[first + 1] the key direction's stream, KEYS[first + 2] the wallet direction's (same slot)
    ARGV[arg + 1] the record id
    ARGV[arg + 2] the side acknowledging: 'key' or 'wallet', or '' for either
    ARGV[arg + 3] the receipt's `at` (ISO-8601 UTC, ms)
    ARGV[arg + 4] the receipts' TTL in seconds, ARGV[arg + 5] the records' lifetime in milliseconds
    ARGV[arg + 6] most records retained per direction
    ARGV[arg + 7] the channel of the notice for a record to the key (the wallet path's room), ARGV[arg + 8] for a
                  record to the wallet (the key path's); '' when the caller publishes (a cluster: the channel is
                  in another slot)
    ARGV[arg + 9] the pair's wkIdentity, ARGV[arg + 10] the notice's header (the event follows it)
  Output: acknowledge() returns {0} when no such record; {3, the record's target side} when it is a record to the
    other side (nothing stored); else {1 when stored or 2 when acknowledged before, the receipt JSON, the target
    side, the record's action, epoch, offset, the `delivered` event's JSON}
]]
local function find(stream, since, prefix, most)
  local newest = redis.call('XREVRANGE', stream, '+', since, 'COUNT', 1)[1]
  if not newest then return nil end
  if string.sub(newest[2][4], 1, #prefix) == prefix then return newest[2][4] end
  if most < 2 then return nil end
  for _, entry in ipairs(redis.call('XREVRANGE', stream, '(' .. newest[1], since, 'COUNT', most - 1)) do
    if string.sub(entry[2][4], 1, #prefix) == prefix then return entry[2][4] end
  end
  return nil
end

local function acknowledge()
  local id, acking = ARGV[arg + 1], ARGV[arg + 2]
  local now = redis.call('TIME')
  local since = string.format('%d', tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
    - tonumber(ARGV[arg + 5]) + 1)
  local prefix = '{"id":"' .. id .. '",'
  local order = acking == 'wallet' and {'wallet', 'key'} or {'key', 'wallet'}
  local found, side
  for _, direction in ipairs(order) do
    local stream = KEYS[first + (direction == 'key' and 1 or 2)]
    found = find(stream, since, prefix, tonumber(ARGV[arg + 6]))
    if found then
      side = direction
      break
    end
  end
  if not found then return {0} end
  if acking ~= '' and side ~= acking then return {3, side} end
  local action = string.match(found, '"action":"([A-Za-z0-9_:-]+)"')
  local epoch, offset = string.match(found, ',"epoch":"([A-Za-z0-9_-]+)","offset":(%d+)}$')
  local receipt = '{"side":"' .. side .. '","at":"' .. ARGV[arg + 3] .. '"}'
  local status = 1
  if redis.call('HSETNX', KEYS[first], id, receipt) == 0 then
    status = 2
    receipt = redis.call('HGET', KEYS[first], id)
  else
    redis.call('EXPIRE', KEYS[first], ARGV[arg + 4])
  end
  local at = string.match(receipt, '"at":"([^"]+)"')
  local event = '{"wkIdentity":"' .. ARGV[arg + 9] .. '","id":"' .. id .. '","action":"' .. action ..
    '","epoch":"' .. epoch .. '","offset":' .. offset .. ',"side":"' .. side .. '","at":"' .. at .. '"}'
  local channel = side == 'key' and ARGV[arg + 7] or ARGV[arg + 8]
  if status == 1 and channel ~= '' then redis.call('SPUBLISH', channel, ARGV[arg + 10] .. event) end
  return {status, receipt, side, action, epoch, tonumber(offset), event}
end
