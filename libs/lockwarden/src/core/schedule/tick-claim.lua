-- Decide, once across all instances, what becomes of one tick of a scheduled job.
-- Whoever fires a tick first decides it; every later firing of the same tick (another
-- instance, a late timer, a clock that lags) finds the record and does nothing.
-- KEYS[1] the tick's record: "<state>|<instance>[|<fencing token>]", kept ARGV[2] ms
-- KEYS[2] the job's run pointer: "<tick ms>|<fencing token>|<instance>" while a run is going
-- KEYS[3] the job's lock (the mutex string of acquire.lua)
-- ARGV[1] the tick's scheduled time, ms since the epoch
-- ARGV[2] how long the record is kept, ms   ARGV[3] instance id
-- ARGV[4] 'w' when a tick waits for the run before it to end, '' when it then skips
-- Returns {state, run pointer or '', the lock holder's instance or ''}:
--   'early'    the server's clock has not reached the tick yet (the caller's runs ahead);
--              the second item is the ms to go, and nothing is written
--   'taken'    the tick was decided before; the second item is its record
--   'claimed'  the caller runs it (the lock was free)
--   'waiting'  the caller waits for the lock, then runs it (ARGV[4] = 'w')
--   'overrun'  skipped: the job's previous run is still going
--   'busy'     skipped: the lock is held, but by no run (lockAtLeastMs keeps it, a caller
--              outside the scheduler holds it, or a run that has the lock but has not yet
--              named its tick, a window of one round trip)
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local at = tonumber(ARGV[1])
if now < at then return {'early', at - now} end
local record = redis.call('get', KEYS[1])
if record then return {'taken', record} end
local run = redis.call('get', KEYS[2]) or ''
local state = 'claimed'
local held = redis.call('get', KEYS[3])
local holder = ''
if held then
  -- The mutex string is "owner|fence|instance[|w]": only the instance leaves the script.
  holder = string.match(held, '^[^|]*|[^|]*|([^|]*)') or ''
  if ARGV[4] == 'w' then
    state = 'waiting'
  elseif run ~= '' then
    state = 'overrun'
  else
    state = 'busy'
  end
end
redis.call('set', KEYS[1], state .. '|' .. ARGV[3], 'PX', ARGV[2])
return {state, run, holder}
