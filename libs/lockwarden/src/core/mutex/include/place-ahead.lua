-- Walks a queue (zset of owner tokens by arrival, records "deadline|..." in a hash) from its
-- head to `token`, dropping places whose deadline passed, and returns the deadline of the
-- first live place ahead of it whose record `holdsBack` says it must wait behind, or nil.
local function placeAhead(queue, records, token, now, holdsBack)
  for _, other in ipairs(redis.call('zrange', queue, 0, -1)) do
    if other == token then return nil end
    local rec = redis.call('hget', records, other)
    local deadline = rec and tonumber(string.match(rec, '^(%d+)|'))
    if deadline and deadline >= now then
      if holdsBack(rec) then return deadline end
    else
      redis.call('zrem', queue, other)
      redis.call('hdel', records, other)
    end
  end
  return nil
end
