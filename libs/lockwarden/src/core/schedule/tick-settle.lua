-- A tick's outcome is final: its run ended ('done', 'failed'), or it never got the lock
-- ('overrun'). The record keeps its expiry; the run pointer goes once it is this run's.
-- ARGV[1] 'handed-off' hands the tick off instead: the record goes, if this instance still
-- holds it unrun (its process began to shut down), so another instance may run it, and the
-- tick is left for the job's next holder to run (the "handed-off" key, see tick-adopt.lua):
-- the instances whose timers fired before found it taken, and would otherwise never run it.
-- KEYS[1] the tick's record   KEYS[2] (runs only) the job's run pointer
-- KEYS[3] ('handed-off' only) the job's handed-off tick
-- ARGV[1] the outcome   ARGV[2] instance id   ARGV[3] (runs only) the pointer the run set, or ''
-- ARGV[4] ('handed-off' only) the tick's time, ms
-- Returns 1 when the pointer was still this run's (or there was none to clear), else 0.
local cleared = 1
if KEYS[2] and ARGV[3] ~= '' then
  if redis.call('get', KEYS[2]) == ARGV[3] then
    redis.call('del', KEYS[2])
  else
    cleared = 0
  end
end
if ARGV[1] == 'handed-off' then
  local record = redis.call('get', KEYS[1]) or ''
  local state, instance, rest = string.match(record, '^(%a+)|([^|]*)(.*)$')
  if instance == ARGV[2] and (state == 'claimed' or state == 'waiting' or state == 'running') then
    -- Handed off for as long as the record would have been kept. One tick at a time: an older
    -- one already waiting there goes first.
    local keep = redis.call('pttl', KEYS[1])
    redis.call('del', KEYS[1])
    if KEYS[3] and keep > 0 then redis.call('set', KEYS[3], ARGV[4], 'NX', 'PX', keep) end
  end
  return cleared
end
redis.call('set', KEYS[1], ARGV[1] .. '|' .. ARGV[2], 'XX', 'KEEPTTL')
return cleared
