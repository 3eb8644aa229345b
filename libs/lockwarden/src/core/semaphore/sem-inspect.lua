-- Read one semaphore's state for operators: never an owner token. Changes nothing.
-- KEYS[1] holders zset   KEYS[2] permits hash   KEYS[3] limit   KEYS[4] fencing counter
-- Returns { limit (-1: none stored), last fencing token (0: none),
--           then per live holder: instance id, permits, ms left } (lapsed holders are left out)
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = { tonumber(redis.call('get', KEYS[3]) or '-1'), redis.call('get', KEYS[4]) or '0' }
local live = redis.call('zrangebyscore', KEYS[1], now, '+inf', 'WITHSCORES')
for i = 1, #live, 2 do
  local record = redis.call('hget', KEYS[2], live[i])
  local permits, instance = '0', '?'
  if record then permits, instance = string.match(record, '^(%d+)|%d+|(.*)$') end
  out[#out + 1] = instance
  out[#out + 1] = tonumber(permits)
  out[#out + 1] = tonumber(live[i + 1]) - now
end
return out
