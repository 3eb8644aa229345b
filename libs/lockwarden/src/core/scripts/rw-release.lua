-- Release a read or write hold, or withdraw a writer that gave up waiting.
-- The messages it publishes are the wire protocol named in scripts/wire.ts.
-- KEYS[1] lock hash   KEYS[2] waiting writers   KEYS[3] wake-up channel
-- ARGV[1] owner token   ARGV[2] 'r' or 'w'   ARGV[3] 'publish' or 'spublish'
-- Returns 1 when it released the caller's hold, 0 when the caller held nothing.
if ARGV[2] == 'w' then
  if redis.call('hget', KEYS[1], 'w') ~= ARGV[1] then
    redis.call('zrem', KEYS[2], ARGV[1])
    return 0
  end
  redis.call('hdel', KEYS[1], 'w', 'wd', 'f', 'wi')
  -- One message wakes every waiting reader (and the writers, who re-check).
  redis.call(ARGV[3], KEYS[3], 'a')
  return 1
end

if redis.call('hdel', KEYS[1], 'r:' .. ARGV[1]) == 0 then return 0 end
-- Wake a waiting writer only when the last live reader has left.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local flat = redis.call('hgetall', KEYS[1])
for i = 1, #flat, 2 do
  if string.sub(flat[i], 1, 2) == 'r:' and tonumber(string.match(flat[i + 1], '^(%d+)')) >= now then
    return 1
  end
end
if redis.call('exists', KEYS[2]) == 1 then redis.call(ARGV[3], KEYS[3], 'a') end
return 1
