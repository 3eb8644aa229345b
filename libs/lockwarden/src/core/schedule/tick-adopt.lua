-- The job's holder takes over a tick another instance handed off while shutting down (see
-- tick-settle.lua), unless someone claimed that tick since (an instance whose timer fired
-- late): a handed-off tick runs once, by whoever claims it first.
-- KEYS[1] the job's handed-off tick   KEYS[2] that tick's record
-- ARGV[1] the tick's time, ms (as read from KEYS[1])   ARGV[2] instance id
-- Returns 1 when the caller now has the tick claimed (its record says so), else 0.
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
local keep = redis.call('pttl', KEYS[1])
redis.call('del', KEYS[1])
if keep <= 0 or redis.call('exists', KEYS[2]) == 1 then return 0 end
redis.call('set', KEYS[2], 'claimed|' .. ARGV[2], 'PX', keep)
return 1
