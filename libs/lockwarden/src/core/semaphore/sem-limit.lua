-- Set the number of permits of a semaphore. Lowering it never takes a held permit away:
-- it only holds new grants back until enough holders have left.
-- KEYS[1] limit string   KEYS[2] wake-up channel
-- ARGV[1] the new limit   ARGV[2] 'publish' or 'spublish'
-- Returns the previous limit (0 when none was stored).
local old = tonumber(redis.call('get', KEYS[1]) or '0')
local limit = tonumber(ARGV[1])
redis.call('set', KEYS[1], limit)
-- More room: every waiter may try.
if limit > old then redis.call(ARGV[2], KEYS[2], 'a') end
return old
