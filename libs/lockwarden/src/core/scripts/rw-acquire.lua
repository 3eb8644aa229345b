-- Take a read or write hold on a read/write lock, or learn how long to wait.
-- KEYS[1] lock hash: w = writer token, wd = writer deadline, f = writer's fencing token,
--         wi = writer instance, and one field 'r:<token>' = "deadline|instance" per reader.
--         Deadlines are server time (ms); the hash's own TTL only reaps it when all are gone.
-- KEYS[2] waiting writers: zset token -> deadline (server ms), for writer preference
-- KEYS[3] fencing counter (expires a minute after its last use; see next-fence)
-- ARGV[1] owner token   ARGV[2] lease ms   ARGV[3] instance id   ARGV[4] 'r' or 'w'
-- ARGV[5] reads: the token of the write this flow holds ('' if none), which allows a downgrade
--         writes: how long a waiting writer keeps its place without checking back (ms)
-- ARGV[6] reads: '1' = writer preference (wait behind waiting writers)
-- Returns the fencing token (>= 0) when granted, else -(ms worth waiting).
-- #include next-fence
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local token, lease, mode = ARGV[1], tonumber(ARGV[2]), ARGV[4]

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

-- A read carries the last write's token. A counter idle for a minute has expired: seed it
-- from the clock, as nextFence would, so the read's token is above every write before it and
-- below the next one.
local function lastFence(counter)
  local f = redis.call('get', counter)
  if f then
    redis.call('pexpire', counter, 60000)
    return tonumber(f)
  end
  local t = redis.call('time')
  f = t[1] .. string.format('%06d', tonumber(t[2]))
  redis.call('set', counter, f, 'PX', 60000)
  return tonumber(f)
end

if mode == 'r' then
  local field = 'r:' .. token
  if redis.call('hexists', KEYS[1], field) == 1 then
    return tonumber(redis.call('get', KEYS[3]) or '0')
  end
  local downgrade = writer ~= nil and writer == ARGV[5]
  if writer and not downgrade then return -math.max(1, writerDeadline - now) end
  if not downgrade and ARGV[6] == '1' then
    redis.call('zremrangebyscore', KEYS[2], '-inf', now - 1)
    local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
    if first[1] then return -math.max(1, tonumber(first[2]) - now) end
  end
  redis.call('hset', KEYS[1], field, (now + lease) .. '|' .. ARGV[3])
  keepAlive(now + lease)
  return lastFence(KEYS[3])
end

if writer == token then return tonumber(redis.call('hget', KEYS[1], 'f')) end
if not writer and readers == 0 then
  local f = nextFence(KEYS[3])
  redis.call('hset', KEYS[1], 'w', token, 'wd', now + lease, 'f', f, 'wi', ARGV[3])
  keepAlive(now + lease)
  redis.call('zrem', KEYS[2], token)
  return tonumber(f)
end
-- Busy: queue up as a waiting writer, so new readers hold back (writer preference).
local placeTtl = tonumber(ARGV[5])
redis.call('zadd', KEYS[2], now + placeTtl, token)
if redis.call('pttl', KEYS[2]) < placeTtl then redis.call('pexpire', KEYS[2], placeTtl) end
return -math.max(1, latest - now)
