--[[
  Reads a direction's position and its retained records that have not expired, after the client's position, each
  with its receipt (records are stored id first).

  Input:
    KEYS[1] the direction's stream
    KEYS[2] its metadata (same slot)
    KEYS[3] the pair's receipts (same slot)
    ARGV[1] the epoch the client names ('' for none)
    ARGV[2] the offset the client has (0: none)
    ARGV[3] the records' lifetime in milliseconds (an entry's id is its append time)
    ARGV[4] most records to read
  Output:
    {epoch or false, last offset, oldest offset read or 0, then offset, record, its receipt JSON or false, … in
    increasing offset order}: the records above ARGV[2] when ARGV[1] is the epoch or ARGV[2] is 0, else every
    record read
]]
local meta = redis.call('HMGET', KEYS[2], 'epoch', 'offset')
if not meta[1] then return {false, 0, 0} end
local after = 0
if ARGV[1] == meta[1] or ARGV[2] == '0' then after = tonumber(ARGV[2]) end
local now = redis.call('TIME')
local since = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) - tonumber(ARGV[3])
local entries = redis.call('XREVRANGE', KEYS[1], '+', string.format('%d', since + 1), 'COUNT', ARGV[4])
local reply = {meta[1], tonumber(meta[2]), 0}
local taken = 0
for i = 1, #entries do
  local offset = tonumber(entries[i][2][2])
  reply[3] = offset
  if offset <= after then break end
  taken = i
end
for i = taken, 1, -1 do
  local record = entries[i][2][4]
  local id = string.match(record, '^{"id":"([A-Za-z0-9_-]+)",')
  reply[#reply + 1] = tonumber(entries[i][2][2])
  reply[#reply + 1] = record
  reply[#reply + 1] = id and redis.call('HGET', KEYS[3], id) or false
end
return reply
