-- Give back a semaphore holder's permits, or withdraw a waiter that was never granted.
-- The message it publishes is the wire protocol named in scripts/wire.ts.
-- KEYS[1] holders zset   KEYS[2] permits hash   KEYS[3] wake-up channel
-- ARGV[1] owner token   ARGV[2] 'publish' or 'spublish'
-- Returns 1 when it released a live holder, 0 when the caller held nothing (or its lease had run out).
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deadline = tonumber(redis.call('zscore', KEYS[1], ARGV[1]))
local had = redis.call('hdel', KEYS[2], ARGV[1]) == 1
redis.call('zrem', KEYS[1], ARGV[1])
if not deadline and not had then return 0 end
-- Permits came back: every waiter may try (one waiter's grant may leave room for another).
redis.call(ARGV[2], KEYS[3], 'a')
if deadline and deadline >= now then return 1 end
return 0
