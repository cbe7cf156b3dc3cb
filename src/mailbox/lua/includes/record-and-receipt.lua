--[[
  The mailbox's record and the receipt of that record, read together (records are stored id first).

  Declares: found, {record, receipt JSON or false}, or false when the mailbox is empty; record, the mailbox's text.
  Input: `first`, set by the including script: KEYS[first] the mailbox, KEYS[first + 1] the pair's receipts.
  Output: none (the including script returns).
]]
local found = false
local record = redis.call('GET', KEYS[first])
if record then
  local id = string.match(record, '^{"id":"([A-Za-z0-9_-]+)",')
  found = {record, id and redis.call('HGET', KEYS[first + 1], id) or false}
end
