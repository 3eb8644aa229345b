-- A tick's outcome is final: its run ended ('done', 'failed'), or it never got the lock
-- ('overrun'). The record keeps its expiry; the run pointer goes once it is this run's.
-- ARGV[1] 'released' gives the tick back instead: the record goes, if this instance still
-- holds it unrun (its process began to shut down), so another instance may run it.
-- KEYS[1] the tick's record   KEYS[2] (runs only) the job's run pointer
-- ARGV[1] the outcome   ARGV[2] instance id   ARGV[3] (runs only) the pointer the run set
-- Returns 1 when the pointer was still this run's (or there was none to clear), else 0.
local cleared = 1
if KEYS[2] then
  if redis.call('get', KEYS[2]) == ARGV[3] then
    redis.call('del', KEYS[2])
  else
    cleared = 0
  end
end
if ARGV[1] == 'released' then
  local record = redis.call('get', KEYS[1]) or ''
  local state, instance, rest = string.match(record, '^(%a+)|([^|]*)(.*)$')
  if instance == ARGV[2] and (state == 'claimed' or state == 'waiting' or state == 'running') then
    redis.call('del', KEYS[1])
  end
  return cleared
end
redis.call('set', KEYS[1], ARGV[1] .. '|' .. ARGV[2], 'XX', 'KEEPTTL')
return cleared
