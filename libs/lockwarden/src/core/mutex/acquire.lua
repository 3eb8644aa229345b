-- Take a mutex, or learn how long to wait for it.
-- KEYS[1] lock: the string "owner|fence|instance", with "|w" appended once anyone waits for
--         it (so a release publishes only when someone listens). Its TTL is the lease. A plain
--         grant (SET NX PX, mutex/redis-mutex-store.ts) leaves the fence empty until the holder
--         reads its token (fence-mint.lua).
-- KEYS[2] fencing counter (tokens only ever rise; seeded from TIME, expires when idle: next-fence)
-- Fair acquires only (the key count says which):
-- KEYS[3] fair queue: zset of waiting owner tokens, scored by arrival (server time)
-- KEYS[4] fair waiter records: hash token -> "deadline|lease|waiterId|inbox|seq|instance"
-- ARGV[1] owner token   ARGV[2] lease ms   ARGV[3] instance id
-- ARGV[4] 'w' when the caller found the lock busy before (others may wait beside it: its
--         lock is marked waited for from the start); may be omitted by a plain first attempt
-- Fair only: ARGV[5] waiter id   ARGV[6] waiter record ttl ms
--            ARGV[7] the lease a hand-off to this waiter starts with (short: a waiter that died
--                    before it used the hand-off costs the others at most that)
--            ARGV[8] the inbox of the waiter's engine: a release tells only that channel
--            ARGV[9] the number of this attempt: a hand-off names the last one it saw
-- Returns the fencing token (> 0) when the caller owns the lock, 0 when it owns it through a
-- plain grant whose token nobody read yet, else -(ms worth waiting).
-- #include next-fence
local token = ARGV[1]
local mark = ARGV[4] == 'w' and '|w' or ''
local held = redis.call('get', KEYS[1])
if not held and #KEYS == 2 then
  -- Plain and free: three calls, the whole uncontended path.
  local f = nextFence(KEYS[2])
  redis.call('set', KEYS[1], token .. '|' .. f .. '|' .. ARGV[3] .. mark, 'PX', ARGV[2])
  return tonumber(f)
end
if held then
  local owner, fence, waited = string.match(held, '^([^|]*)|(%d*)|[^|]*(|?w?)$')
  if owner == token then
    -- A queued waiter handed the lock by a release confirms it: the full lease starts now,
    -- so its holder can time the lease from when it sent this call.
    redis.call('pexpire', KEYS[1], ARGV[2])
    return tonumber(fence) or 0
  end
  -- Busy: mark it, so its release wakes whoever waits (the caller subscribes before retrying).
  if waited == '' then redis.call('append', KEYS[1], '|w') end
  if #KEYS == 2 then
    local wait = redis.call('pttl', KEYS[1])
    if wait < 1 then wait = 1 end
    return -wait
  end
end

-- Fair: the oldest live waiter goes first; places that lapsed are dropped.
local t = redis.call('time')
local nowUs = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now = math.floor(nowUs / 1000)
local head, headDeadline
while true do
  head = redis.call('zrange', KEYS[3], 0, 0)[1]
  if not head then break end
  local rec = redis.call('hget', KEYS[4], head)
  headDeadline = rec and tonumber(string.match(rec, '^(%d+)|'))
  if headDeadline and headDeadline >= now then break end
  redis.call('zrem', KEYS[3], head)
  redis.call('hdel', KEYS[4], head)
end

if not held and (not head or head == token) then
  -- Others may be queued behind the head: its release must look at the queue.
  if head then mark = '|w' end
  local f = nextFence(KEYS[2])
  redis.call('set', KEYS[1], token .. '|' .. f .. '|' .. ARGV[3] .. mark, 'PX', ARGV[2])
  if head then
    redis.call('zrem', KEYS[3], token)
    redis.call('hdel', KEYS[4], token)
  end
  return tonumber(f)
end

local ttl = tonumber(ARGV[6])
redis.call('zadd', KEYS[3], 'NX', nowUs, token)
redis.call('hset', KEYS[4], token,
  (now + ttl) .. '|' .. ARGV[7] .. '|' .. ARGV[5] .. '|' .. ARGV[8] .. '|' .. ARGV[9] .. '|' .. ARGV[3])
redis.call('pexpire', KEYS[3], ttl)
redis.call('pexpire', KEYS[4], ttl)
if not held then
  -- Free, but an earlier waiter goes first: check back when its place would lapse.
  return -math.max(1, headDeadline - now)
end
local wait = redis.call('pttl', KEYS[1])
if wait < 1 then wait = 1 end
return -wait
