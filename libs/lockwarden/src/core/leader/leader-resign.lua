-- Mark the latest leadership term resigned, only while it is still the caller's and still led,
-- log it as "<fencing token>-1" and announce it.
-- KEYS[1] latest term   KEYS[2] term log   KEYS[3] announcement channel
-- ARGV[1] fencing token   ARGV[2] 'publish' or 'spublish'   ARGV[3] log length (about)
-- Returns 1 when recorded, 0 when the term was no longer the caller's.
if redis.call('hget', KEYS[1], 'fencingToken') ~= ARGV[1] or redis.call('hget', KEYS[1], 'state') ~= 'leading' then
  return 0
end
redis.call('hset', KEYS[1], 'state', 'resigned')
redis.call('xadd', KEYS[2], 'MAXLEN', '~', ARGV[3], ARGV[1] .. '-1', 'type', 'resigned')
redis.call(ARGV[2], KEYS[3], 'resigned:' .. ARGV[1])
return 1
