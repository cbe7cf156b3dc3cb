-- The mailbox (KEYS[first]) and the receipt of its record (in KEYS[first + 1]) as `found`: {record, receipt or
-- false}, or false when the mailbox is empty. Records are stored id first.
local found = false
local record = redis.call('GET', KEYS[first])
if record then
  local id = string.match(record, '^{"id":"([A-Za-z0-9_-]+)",')
  found = {record, id and redis.call('HGET', KEYS[first + 1], id) or false}
end
