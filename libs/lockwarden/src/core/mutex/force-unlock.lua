-- Take a lock from whoever holds it: an admin operation. Deletes the mutex and the
-- The messages it publishes are the wire protocol named in backend/wire.ts.
-- read/write lock of one name, with their queues, but keeps the fencing counters so tokens
-- keep rising. Wakes every waiter. Holders learn of it at their next renewal.
-- KEYS[1] mutex hash   KEYS[2] mutex fair queue   KEYS[3] mutex waiter records
-- KEYS[4] mutex channel   KEYS[5] read/write hash   KEYS[6] waiting writers
-- KEYS[7] read/write channel   KEYS[8] read/write queue   KEYS[9] read/write waiter records
-- ARGV[1] 'publish' or 'spublish'
-- Returns how many of the two locks (mutex, read/write) were held.
local removed = redis.call('del', KEYS[1]) + redis.call('del', KEYS[5])
redis.call('del', KEYS[2], KEYS[3], KEYS[6], KEYS[8], KEYS[9])
redis.call(ARGV[1], KEYS[4], 'r')
redis.call(ARGV[1], KEYS[7], 'a')
return removed
