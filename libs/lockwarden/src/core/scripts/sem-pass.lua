-- Give back a semaphore holder's permits and, in the same step, grant them to a waiter of
-- the same process when its ask fits: the waiter is not woken to try, and no other
-- caller takes the permits between the release and its attempt. Permits it does not take
-- are announced as sem-release.lua does.
-- KEYS[1] holders zset   KEYS[2] permits hash (with "#used", see sem-acquire.lua)
-- KEYS[3] wake-up channel   KEYS[4] limit   KEYS[5] fencing counter
-- ARGV[1] releasing owner token   ARGV[2] 'publish' or 'spublish'
-- ARGV[3] the waiter's owner token   ARGV[4] permits it asks   ARGV[5] its lease ms
-- ARGV[6] its instance id
-- Returns { 1 when it released a live holder else 0, the waiter's fencing token or 0 }
-- #include next-fence
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deadline = tonumber(redis.call('zscore', KEYS[1], ARGV[1]))
local record = redis.call('hget', KEYS[2], ARGV[1])
-- The releaser held nothing: there is nothing of its own to pass on.
if not deadline and not record then return { 0, 0 } end
redis.call('zrem', KEYS[1], ARGV[1])
local permits = 1
local used = tonumber(redis.call('hget', KEYS[2], '#used'))
if record then
  permits = tonumber(string.match(record, '^(%d+)'))
  redis.call('hdel', KEYS[2], ARGV[1])
  if used then used = used - permits end
end
local released = 0
if deadline and deadline >= now then released = 1 end

-- Only on a count this script can trust (a missing one is rebuilt by the next attempt), and
-- never a second grant to a waiter that already holds.
local f, asked, lease = '0', tonumber(ARGV[4]), tonumber(ARGV[5])
local limit = tonumber(redis.call('get', KEYS[4]))
if used and limit and used + asked <= limit and not redis.call('zscore', KEYS[1], ARGV[3]) then
  f = nextFence(KEYS[5])
  redis.call('zadd', KEYS[1], now + lease, ARGV[3])
  redis.call('hset', KEYS[2], ARGV[3], asked .. '|' .. f .. '|' .. ARGV[6], '#used', used + asked)
  for i = 1, 2 do
    if redis.call('pttl', KEYS[i]) < lease then redis.call('pexpire', KEYS[i], lease) end
  end
  permits = permits - asked
elseif used then
  if used > 0 then redis.call('hset', KEYS[2], '#used', used) else redis.call('hdel', KEYS[2], '#used') end
end
for _ = 1, permits do redis.call(ARGV[2], KEYS[3], 'r') end
return { released, tonumber(f) }
