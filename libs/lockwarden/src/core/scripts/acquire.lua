-- Take a mutex, or learn how long to wait for it.
-- KEYS[1] lock hash {o = owner token, f = fencing token, i = instance id}
-- KEYS[2] fencing counter (kept after release, so tokens only ever rise; seeded from TIME)
-- KEYS[3] fair queue: zset of waiting owner tokens, scored by arrival (server time)
-- KEYS[4] fair waiter records: hash token -> "deadline|lease|waiterId|instance"
-- ARGV[1] owner token   ARGV[2] lease ms   ARGV[3] instance id
-- ARGV[4] '1' = fair    ARGV[5] waiter id  ARGV[6] waiter record ttl ms
-- ARGV[7] the lease a hand-off to this waiter starts with (short: the waiter confirms it)
-- Returns the fencing token (> 0) when the caller owns the lock, else -(ms worth waiting).
-- The next fencing token, as a string (Lua prints numbers with 14 digits, too few for these).
-- A counter that is missing (a key never locked, or one a restart without persistence
-- wiped) starts from the server clock in microseconds: above every token it handed out
-- before, while the clock does not go back and grants never outpaced one per microsecond.
local function nextFence(counter)
  local f = redis.call('incr', counter)
  if f > 1 then return string.format('%d', f) end
  local t = redis.call('time')
  local seed = t[1] .. string.format('%06d', tonumber(t[2]))
  redis.call('set', counter, seed)
  return seed
end
local owner = redis.call('hget', KEYS[1], 'o')
if owner == ARGV[1] then
  -- A queued waiter handed the lock by a release confirms it: the full lease starts now,
  -- so its holder can time the lease from when it sent this call.
  redis.call('pexpire', KEYS[1], ARGV[2])
  return tonumber(redis.call('hget', KEYS[1], 'f'))
end

local fair = ARGV[4] == '1'
local now, nowUs, head, headDeadline
if fair then
  local t = redis.call('time')
  nowUs = tonumber(t[1]) * 1000000 + tonumber(t[2])
  now = math.floor(nowUs / 1000)
  while true do
    head = redis.call('zrange', KEYS[3], 0, 0)[1]
    if not head then break end
    local rec = redis.call('hget', KEYS[4], head)
    headDeadline = rec and tonumber(string.match(rec, '^(%d+)|'))
    if headDeadline and headDeadline >= now then break end
    redis.call('zrem', KEYS[3], head)
    redis.call('hdel', KEYS[4], head)
  end
end

if not owner and (not head or head == ARGV[1]) then
  local f = nextFence(KEYS[2])
  redis.call('hset', KEYS[1], 'o', ARGV[1], 'f', f, 'i', ARGV[3])
  redis.call('pexpire', KEYS[1], ARGV[2])
  if head then
    redis.call('zrem', KEYS[3], ARGV[1])
    redis.call('hdel', KEYS[4], ARGV[1])
  end
  return tonumber(f)
end

if fair then
  local ttl = tonumber(ARGV[6])
  redis.call('zadd', KEYS[3], 'NX', nowUs, ARGV[1])
  redis.call('hset', KEYS[4], ARGV[1], (now + ttl) .. '|' .. ARGV[7] .. '|' .. ARGV[5] .. '|' .. ARGV[3])
  redis.call('pexpire', KEYS[3], ttl)
  redis.call('pexpire', KEYS[4], ttl)
  if not owner then
    -- Free, but an earlier waiter goes first: check back when its place would lapse.
    return -math.max(1, headDeadline - now)
  end
end

local wait = redis.call('pttl', KEYS[1])
if wait < 1 then wait = 1 end
return -wait
