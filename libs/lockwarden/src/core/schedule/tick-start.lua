-- A claimed tick's run begins, its caller holding the job's lock. The run pointer then
-- names it: should the run never finish (the process died, or lost the lock), the next
-- holder of the lock finds the pointer and knows which tick was cut short.
-- KEYS[1] the job's run pointer (see tick-claim.lua)   KEYS[2] the tick's record
-- KEYS[3] (waiting ticks only) the record of the tick after it
-- ARGV[1] the tick's time, ms   ARGV[2] the holder's fencing token   ARGV[3] instance id
-- ARGV[4] how long the pointer is kept when nobody clears it, ms
-- Returns {'started' | 'superseded', the pointer found or ''}. A waiting tick is superseded
-- when the tick after it was fired meanwhile: only the newest waiting tick runs.
local found = redis.call('get', KEYS[1]) or ''
if KEYS[3] and redis.call('exists', KEYS[3]) == 1 then
  redis.call('set', KEYS[2], 'superseded|' .. ARGV[3], 'XX', 'KEEPTTL')
  return {'superseded', found}
end
redis.call('set', KEYS[1], ARGV[1] .. '|' .. ARGV[2] .. '|' .. ARGV[3], 'PX', ARGV[4])
redis.call('set', KEYS[2], 'running|' .. ARGV[3] .. '|' .. ARGV[2], 'XX', 'KEEPTTL')
return {'started', found}
