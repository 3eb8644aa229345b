-- Give back a semaphore holder's permits, or withdraw a waiter that was never granted.
-- The message it publishes is the wire protocol named in scripts/wire.ts.
-- KEYS[1] holders zset   KEYS[2] permits hash (with "#used", see sem-acquire.lua)
-- KEYS[3] wake-up channel
-- ARGV[1] owner token   ARGV[2] 'publish' or 'spublish'
-- Returns 1 when it released a live holder, 0 when the caller held nothing (or its lease had run out).
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deadline = tonumber(redis.call('zscore', KEYS[1], ARGV[1]))
local record = redis.call('hget', KEYS[2], ARGV[1])
if not deadline and not record then return 0 end
redis.call('zrem', KEYS[1], ARGV[1])
local permits = 1
if record then
  permits = tonumber(string.match(record, '^(%d+)'))
  redis.call('hdel', KEYS[2], ARGV[1])
  -- Every record in the hash is in the count; a count that is missing is rebuilt by the next
  -- attempt. At 0 it goes, so the hash empties, and ends, with the holders zset.
  if redis.call('hexists', KEYS[2], '#used') == 1 and redis.call('hincrby', KEYS[2], '#used', -permits) <= 0 then
    redis.call('hdel', KEYS[2], '#used')
  end
end
-- Permits came back: one wake-up per permit, each for one waiter per process. Waking every
-- waiter for each permit (a thundering herd) cost five times the throughput with 16 workers
-- on 4 permits; a woken waiter that finds no room waits for the next release, or its timer.
for _ = 1, permits do redis.call(ARGV[2], KEYS[3], 'r') end
if deadline and deadline >= now then return 1 end
return 0
