-- Give back a semaphore holder's permits, or withdraw a waiter that was never granted.
-- The message it publishes is the wire protocol named in scripts/wire.ts.
-- KEYS[1] holders zset   KEYS[2] permits hash   KEYS[3] wake-up channel
-- ARGV[1] owner token   ARGV[2] 'publish' or 'spublish'
-- Returns 1 when it released a live holder, 0 when the caller held nothing (or its lease had run out).
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deadline = tonumber(redis.call('zscore', KEYS[1], ARGV[1]))
local record = redis.call('hget', KEYS[2], ARGV[1])
redis.call('hdel', KEYS[2], ARGV[1])
redis.call('zrem', KEYS[1], ARGV[1])
if not deadline and not record then return 0 end
-- Permits came back: one wake-up per permit, each for one waiter per process. Waking every
-- waiter for each permit (a thundering herd) cost five times the throughput with 16 workers
-- on 4 permits; a woken waiter that finds no room waits for the next release, or its timer.
local permits = record and tonumber(string.match(record, '^(%d+)')) or 1
for _ = 1, permits do redis.call(ARGV[2], KEYS[3], 'r') end
if deadline and deadline >= now then return 1 end
return 0
