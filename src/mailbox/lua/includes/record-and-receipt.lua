--[[
  The mailbox's record and the receipt of that record, read together (records are stored id first). A record whose
  id the client's entity tags name is not read: only its id and receipt, from which the caller tells a 304.

  Declares: found, {record, receipt JSON or false} or, for a named id, {false, receipt JSON or false, id}; false
    when the mailbox is empty. named, the ids given; record, the mailbox's text.
  Input: `first` and `arg`, set by the including script: KEYS[first] the mailbox, KEYS[first + 1] the pair's
    receipts; ARGV[arg + 1] … the ids the request's If-None-Match names ('*': whatever exists), none without one.
  Output: none (the including script returns).
]]
local found = false
local named = {}
for i = arg + 1, #ARGV do named[ARGV[i]] = true end
if #ARGV > arg then
  -- An id is at most 64 characters: the start of the text names it.
  local id = string.match(redis.call('GETRANGE', KEYS[first], 0, 79), '^{"id":"([A-Za-z0-9_-]+)",')
  if id and (named[id] or named['*']) then found = {false, redis.call('HGET', KEYS[first + 1], id), id} end
end
local record = not found and redis.call('GET', KEYS[first])
if record then
  local id = string.match(record, '^{"id":"([A-Za-z0-9_-]+)",')
  found = {record, id and redis.call('HGET', KEYS[first + 1], id) or false}
end
