-- The head of one mutex's fair queue, for operators, without ever returning an owner token.
-- KEYS[1] fair queue (zset of owner tokens by arrival, server µs)   KEYS[2] fair waiter records
-- ARGV[1] how many waiters at most
-- Returns { queued, instance, waited ms, instance, waited ms, ... } in arrival order.
local t = redis.call('time')
local nowUs = tonumber(t[1]) * 1000000 + tonumber(t[2])
local out = { redis.call('zcard', KEYS[1]) }
local head = redis.call('zrange', KEYS[1], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
for i = 1, #head, 2 do
  local rec = redis.call('hget', KEYS[2], head[i])
  -- "deadline|lease|waiterId|inbox|seq|instance": the instance is everything after the fifth bar
  local instance = rec and string.match(rec, '^[^|]*|[^|]*|[^|]*|[^|]*|[^|]*|(.*)$') or ''
  out[#out + 1] = instance
  out[#out + 1] = math.max(0, math.floor((nowUs - tonumber(head[i + 1])) / 1000))
end
return out
