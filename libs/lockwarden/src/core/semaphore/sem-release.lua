-- Give back a semaphore holder's permits, or withdraw a waiter that was never granted. When a
-- waiter of the same process is named, the permits go to it in the same step if its ask
-- fits: it is not woken to try, and no other caller takes them in between. Permits nobody
-- took here are announced; the messages are the wire protocol named in backend/wire.ts.
-- KEYS[1] holders zset   KEYS[2] permits hash (with "#used", see sem-acquire.lua)
-- KEYS[3] wake-up channel   KEYS[4] limit   KEYS[5] fencing counter
-- KEYS[6] queue   KEYS[7] waiter records (see sem-acquire.lua), when waiters queue: permits
--         left after any hand-off go to the oldest live places whose asks fit, in order, each
--         told on its engine's inbox (the channel, ':' and the inbox id, so the same slot)
-- ARGV[1] owner token   ARGV[2] 'publish' or 'spublish'
-- ARGV[3..6], only to hand the permits off: the waiter's owner token, the permits it asks,
-- its lease ms, its instance id
-- Returns { 1 when it released a live holder else 0 (the caller held nothing, or its lease
-- had run out), the waiter's fencing token or 0 }
-- #include next-fence
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deadline = tonumber(redis.call('zscore', KEYS[1], ARGV[1]))
local record = redis.call('hget', KEYS[2], ARGV[1])
-- The caller held nothing: nothing to give back, nothing of its own to hand off.
local queue, waiters = KEYS[6], KEYS[7]
-- A waiter that gives up withdraws its place here too.
if queue and redis.call('zrem', queue, ARGV[1]) == 1 then redis.call('hdel', waiters, ARGV[1]) end
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

-- A hand-off needs a count this script can trust, and never grants a waiter that holds already.
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
  used = used + asked
  -- It held a place too: it has its permits now.
  if queue and redis.call('zrem', queue, waiter) == 1 then redis.call('hdel', waiters, waiter) end
elseif used then
  -- At 0 the count goes, so the hash empties, and ends, with the holders zset.
  if used > 0 then redis.call('hset', KEYS[2], '#used', used) else redis.call('hdel', KEYS[2], '#used') end
end

-- The queue: the oldest live places whose asks fit get the permits, in order, and only their
-- engines are told. A live place that does not fit stops it (first come, first served),
-- unless it asks more than the limit itself: that one waits for a raise, and is passed over.
if queue and used then limit = limit or tonumber(redis.call('get', KEYS[4])) end
-- Nothing left to hand off (the waiter named took it all, say): the queue is not looked at.
if queue and used and limit and used < limit then
  for _, head in ipairs(redis.call('zrange', queue, 0, -1)) do
    local rec = redis.call('hget', waiters, head)
    local d, n, l, waiterId, inbox, seq, instance
    if rec then
      d, n, l, waiterId, inbox, seq, instance = string.match(rec, '^(%d+)|(%d+)|(%d+)|([^|]*)|([^|]*)|(%d+)|(.*)$')
    end
    local live = d and tonumber(d) >= now and not redis.call('zscore', KEYS[1], head)
    n, l = tonumber(n), tonumber(l)
    if live and n <= limit and used + n > limit then break end
    if live and n <= limit then
      local g = nextFence(KEYS[5])
      used = used + n
      redis.call('zadd', KEYS[1], now + l, head)
      redis.call('hset', KEYS[2], head, n .. '|' .. g .. '|' .. instance, '#used', used)
      for i = 1, 2 do
        if redis.call('pttl', KEYS[i]) < l then redis.call('pexpire', KEYS[i], l) end
      end
      redis.call(ARGV[2], KEYS[3] .. ':' .. inbox, 'g' .. waiterId .. ':' .. g .. ':' .. l .. ':' .. seq)
      permits = permits - n
    end
    if not live or n <= limit then
      redis.call('zrem', queue, head)
      redis.call('hdel', waiters, head)
    end
  end
end
-- One wake-up per permit given back, each for one waiter per process. Waking every waiter
-- for each permit (a thundering herd) cost five times the throughput with 16 workers on 4
-- permits; a woken waiter that finds no room waits for the next release, or its timer.
for _ = 1, permits do redis.call(ARGV[2], KEYS[3], 'r') end
return { released, tonumber(f) }
