-- Give back a semaphore holder's permits, or withdraw a waiter that was never granted. When a
-- waiter of the same process is named, the permits go to it in the same step if its ask
-- fits: it is not woken to try, and no other caller takes them in between. Permits nobody
-- took here are announced; the messages are the wire protocol named in scripts/wire.ts.
-- KEYS[1] holders zset   KEYS[2] permits hash (with "#used", see sem-acquire.lua)
-- KEYS[3] wake-up channel   KEYS[4] limit   KEYS[5] fencing counter
-- ARGV[1] owner token   ARGV[2] 'publish' or 'spublish'
-- ARGV[3..6], only to pass the permits on: the waiter's owner token, the permits it asks,
-- its lease ms, its instance id
-- Returns { 1 when it released a live holder else 0 (the caller held nothing, or its lease
-- had run out), the waiter's fencing token or 0 }
-- #include next-fence
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deadline = tonumber(redis.call('zscore', KEYS[1], ARGV[1]))
local record = redis.call('hget', KEYS[2], ARGV[1])
-- The caller held nothing: nothing to give back, nothing of its own to pass on.
if not deadline and not record then return { 0, 0 } end
redis.call('zrem', KEYS[1], ARGV[1])
local permits = 1
-- Every record in the hash is in the count; a count that is missing is rebuilt by the next attempt.
local used = tonumber(redis.call('hget', KEYS[2], '#used'))
if record then
  permits = tonumber(string.match(record, '^(%d+)'))
  redis.call('hdel', KEYS[2], ARGV[1])
  if used then used = used - permits end
end
local released = 0
if deadline and deadline >= now then released = 1 end

-- Passing on needs a count this script can trust, and never grants a waiter that holds already.
local f, waiter = '0', ARGV[3]
local asked, lease = tonumber(ARGV[4]), tonumber(ARGV[5])
local limit = waiter and used and tonumber(redis.call('get', KEYS[4]))
if limit and used + asked <= limit and not redis.call('zscore', KEYS[1], waiter) then
  f = nextFence(KEYS[5])
  redis.call('zadd', KEYS[1], now + lease, waiter)
  redis.call('hset', KEYS[2], waiter, asked .. '|' .. f .. '|' .. ARGV[6], '#used', used + asked)
  for i = 1, 2 do
    if redis.call('pttl', KEYS[i]) < lease then redis.call('pexpire', KEYS[i], lease) end
  end
  permits = permits - asked
elseif used then
  -- At 0 the count goes, so the hash empties, and ends, with the holders zset.
  if used > 0 then redis.call('hset', KEYS[2], '#used', used) else redis.call('hdel', KEYS[2], '#used') end
end
-- One wake-up per permit given back, each for one waiter per process. Waking every waiter
-- for each permit (a thundering herd) cost five times the throughput with 16 workers on 4
-- permits; a woken waiter that finds no room waits for the next release, or its timer.
for _ = 1, permits do redis.call(ARGV[2], KEYS[3], 'r') end
return { released, tonumber(f) }
