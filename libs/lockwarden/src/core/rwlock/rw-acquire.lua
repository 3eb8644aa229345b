-- Take a read or write lease on a read/write lock, or learn how long to wait.
-- KEYS[1] lock hash: w = writer token, wd = writer deadline, f = writer's fencing token,
--         wi = writer instance, and one field 'r:<token>' = "deadline|instance" per reader.
--         Deadlines are server time (ms); the hash's own TTL only reaps it when all are gone.
-- KEYS[2] waiting writers: zset token -> place deadline (server ms), for writer preference
-- KEYS[3] fencing counter (expires a minute after its last use; see next-fence)
-- Queued attempts only (the key count says which): a waiter that found the lock busy before
-- takes a place in the lock's queue, and a release hands the lock to the oldest places.
-- KEYS[4] queue: zset of waiting owner tokens, scored by arrival (server µs)
-- KEYS[5] waiter records: hash token -> "deadline|r or w|lease|waiterId|inbox|seq|instance"
-- ARGV[1] owner token   ARGV[2] lease ms   ARGV[3] instance id   ARGV[4] 'r' or 'w'
-- ARGV[5] reads: the token of the write this flow holds ('' if none), which allows a downgrade
--         writes: how long a waiting writer keeps its place without checking back (ms)
-- ARGV[6] reads: '1' = writer preference (a first attempt waits behind waiting writers)
-- Queued only: ARGV[7] waiter id   ARGV[8] place ttl ms   ARGV[9] the lease a hand-off starts
--              with   ARGV[10] the inbox of the waiter's engine   ARGV[11] this attempt's number
-- Returns the fencing token (>= 0) when granted, else -(ms worth waiting).
-- #include next-fence
-- #include last-fence
-- #include place-ahead
local t = redis.call('time')
local nowUs = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now = math.floor(nowUs / 1000)
local token, lease, kind = ARGV[1], tonumber(ARGV[2]), ARGV[4]
local queued = #KEYS == 5

-- Read the hash once: drop holders whose own deadline passed (crashed processes).
local writer, writerDeadline, readers, latest = nil, 0, 0, now
local flat = redis.call('hgetall', KEYS[1])
for i = 1, #flat, 2 do
  local field, value = flat[i], flat[i + 1]
  if string.sub(field, 1, 2) == 'r:' then
    local deadline = tonumber(string.match(value, '^(%d+)'))
    if deadline < now then
      redis.call('hdel', KEYS[1], field)
    else
      readers = readers + 1
      if deadline > latest then latest = deadline end
    end
  elseif field == 'w' then
    writer = value
  elseif field == 'wd' then
    writerDeadline = tonumber(value)
  end
end
if writer and writerDeadline < now then
  redis.call('hdel', KEYS[1], 'w', 'wd', 'f', 'wi')
  writer = nil
end
if writer and writerDeadline > latest then latest = writerDeadline end

local function keepAlive(deadline)
  if redis.call('pttl', KEYS[1]) < deadline - now then redis.call('pexpire', KEYS[1], deadline - now) end
end

local function leaveQueue()
  if queued and redis.call('zrem', KEYS[4], token) == 1 then redis.call('hdel', KEYS[5], token) end
end

-- The caller holds already: a release handed it the lock while it was trying, or its earlier
-- grant's reply was lost. Its full lease starts now: the caller times it from this attempt.
local field = 'r:' .. token
if kind == 'r' then
  local mine = redis.call('hget', KEYS[1], field)
  if mine then
    redis.call('hset', KEYS[1], field, (now + lease) .. string.match(mine, '(|.*)$'))
    keepAlive(now + lease)
    leaveQueue()
    return tonumber(lastFence(KEYS[3]))
  end
elseif writer == token then
  redis.call('hset', KEYS[1], 'wd', now + lease)
  keepAlive(now + lease)
  leaveQueue()
  return tonumber(redis.call('hget', KEYS[1], 'f'))
end

-- Queued: places are served in arrival order, and lapsed ones are dropped on the way. A
-- writer waits behind any live place ahead of it; a reader only behind a writer's, and only
-- with writer preference.
local ahead, aheadDeadline = false, now
if queued then
  local deadline = placeAhead(KEYS[4], KEYS[5], token, now, function(rec)
    return kind == 'w' or (ARGV[6] == '1' and string.match(rec, '^%d+|(%a)|') == 'w')
  end)
  if deadline then ahead, aheadDeadline = true, deadline end
end

-- A waiting writer that has no place yet (its first attempt found the lock busy) holds a
-- queued reader back too, with writer preference: it will queue ahead of those after it.
if queued and kind == 'r' and not ahead and ARGV[6] == '1' then
  redis.call('zremrangebyscore', KEYS[2], '-inf', now - 1)
  local writers = redis.call('zrange', KEYS[2], 0, -1, 'WITHSCORES')
  for i = 1, #writers, 2 do
    if not redis.call('zscore', KEYS[4], writers[i]) then
      ahead, aheadDeadline = true, tonumber(writers[i + 1])
      break
    end
  end
end

local function busy(untilMs)
  if queued then
    local ttl = tonumber(ARGV[8])
    redis.call('zadd', KEYS[4], 'NX', nowUs, token)
    redis.call('hset', KEYS[5], token, (now + ttl) .. '|' .. kind .. '|' .. ARGV[9] .. '|' .. ARGV[7] .. '|'
      .. ARGV[10] .. '|' .. ARGV[11] .. '|' .. ARGV[3])
    redis.call('pexpire', KEYS[4], ttl)
    redis.call('pexpire', KEYS[5], ttl)
  end
  return -math.max(1, untilMs - now)
end

if kind == 'r' then
  local downgrade = writer ~= nil and writer == ARGV[5]
  if writer and not downgrade then return busy(writerDeadline) end
  if not downgrade and ahead then return busy(aheadDeadline) end
  if not downgrade and not queued and ARGV[6] == '1' then
    redis.call('zremrangebyscore', KEYS[2], '-inf', now - 1)
    local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
    if first[1] then return -math.max(1, tonumber(first[2]) - now) end
  end
  redis.call('hset', KEYS[1], field, (now + lease) .. '|' .. ARGV[3])
  keepAlive(now + lease)
  leaveQueue()
  return tonumber(lastFence(KEYS[3]))
end

if not writer and readers == 0 and not ahead then
  local f = nextFence(KEYS[3])
  redis.call('hset', KEYS[1], 'w', token, 'wd', now + lease, 'f', f, 'wi', ARGV[3])
  keepAlive(now + lease)
  redis.call('zrem', KEYS[2], token)
  leaveQueue()
  return tonumber(f)
end
-- Busy: a waiting writer holds new readers back (writer preference).
local placeTtl = tonumber(ARGV[5])
redis.call('zadd', KEYS[2], now + placeTtl, token)
if redis.call('pttl', KEYS[2]) < placeTtl then redis.call('pexpire', KEYS[2], placeTtl) end
return busy(latest > now and latest or aheadDeadline)
