-- Take permits of a counting semaphore, or learn how long to wait for them.
-- KEYS[1] holders: zset owner token -> lease deadline (server ms)
-- KEYS[2] permits: hash owner token -> "permits|fence|instance", and the field "#used", the
--         sum of the permits of every record in the hash (kept by this script and
--         sem-release.lua, so an attempt reads one field rather than every holder's record)
-- KEYS[3] limit: the number of permits (a string, kept; set here on first use)
-- KEYS[4] fencing counter (tokens only ever rise; seeded from TIME, expires when idle: next-fence)
-- Queued attempts only (the key count says which): a waiter that found no room before takes a
-- place in the semaphore's queue, and a release hands permits to the oldest places that fit.
-- KEYS[5] queue: zset of waiting owner tokens, scored by arrival (server µs)
-- KEYS[6] waiter records: hash token -> "deadline|permits|lease|waiterId|inbox|seq|instance"
-- ARGV[1] owner token   ARGV[2] lease ms   ARGV[3] instance id   ARGV[4] permits asked
-- ARGV[5] the limit to store when none is stored yet
-- Queued only: ARGV[6] waiter id   ARGV[7] place ttl ms   ARGV[8] the lease a hand-off starts
--              with   ARGV[9] the inbox of the waiter's engine   ARGV[10] this attempt's number
-- Returns the fencing token (> 0) when granted, else -(ms until the earliest live holder's
-- deadline, at least 1; the lease when nobody holds anything, as a limit lowered below the
-- permits asked is raised only by a message).
-- #include next-fence
-- #include place-ahead
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local token, lease, asked = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[4])
local function permitsOf(record) return tonumber(string.match(record, '^(%d+)')) end

local used = tonumber(redis.call('hget', KEYS[2], '#used'))
local counted = used
-- Holders whose own deadline passed (crashed processes) give their permits back first.
local expired = redis.call('zrangebyscore', KEYS[1], '-inf', '(' .. now)
if #expired > 0 then
  for _, gone in ipairs(expired) do
    local record = redis.call('hget', KEYS[2], gone)
    if record and used then used = used - permitsOf(record) end
    redis.call('hdel', KEYS[2], gone)
  end
  redis.call('zremrangebyscore', KEYS[1], '-inf', '(' .. now)
end

-- A caller that holds already (its earlier grant's reply was lost, or a release handed permits off
-- to it while it was trying) gets that grant back, with its lease restarted from now: the caller
-- times the lease from when it sent this attempt.
if redis.call('zscore', KEYS[1], token) then
  local mine = redis.call('hget', KEYS[2], token)
  if mine then
    if used ~= counted then redis.call('hset', KEYS[2], '#used', used) end
    redis.call('zadd', KEYS[1], 'XX', now + lease, token)
    for i = 1, 2 do
      if redis.call('pttl', KEYS[i]) < lease then redis.call('pexpire', KEYS[i], lease) end
    end
    return tonumber(string.match(mine, '^%d+|(%d+)|'))
  end
end

local limit = tonumber(redis.call('get', KEYS[3]))
if not limit then
  limit = tonumber(ARGV[5])
  redis.call('set', KEYS[3], limit)
end

-- No count (a semaphore last used before the count existed): add up the live holders once.
-- A holder without its record is counted as holding everything: never grant past it.
if not used then
  used = 0
  for _, holder in ipairs(redis.call('zrange', KEYS[1], 0, -1)) do
    local record = redis.call('hget', KEYS[2], holder)
    used = used + (record and permitsOf(record) or limit)
  end
end

local first = redis.call('zrange', KEYS[1], 0, 0, 'WITHSCORES')
if not first[1] then
  -- Nobody holds anything, whatever the count says: a record left here has no holder (its
  -- zset expired as a whole), and must not be taken off the count of holders to come.
  used = 0
  redis.call('del', KEYS[2])
end

-- Queued: the oldest live places go first; places that lapsed are dropped. A queued caller
-- behind a live place waits its turn even when its ask would fit, unless that place asks more
-- than the limit itself (it waits for a raise, and must not hold everyone up until then).
local queued = #KEYS == 6
local ahead = false
-- Only an ask that fits can be held back by a place ahead: most queued attempts find no room.
if queued and used + asked <= limit then
  ahead = placeAhead(KEYS[5], KEYS[6], token, now, function(rec)
    return tonumber(string.match(rec, '^%d+|(%d+)|')) <= limit
  end) ~= nil
end

if used + asked <= limit and not ahead then
  if queued then
    redis.call('zrem', KEYS[5], token)
    redis.call('hdel', KEYS[6], token)
  end
  local f = nextFence(KEYS[4])
  redis.call('zadd', KEYS[1], now + lease, token)
  redis.call('hset', KEYS[2], token, asked .. '|' .. f .. '|' .. ARGV[3], '#used', used + asked)
  for i = 1, 2 do
    if redis.call('pttl', KEYS[i]) < lease then redis.call('pexpire', KEYS[i], lease) end
  end
  return tonumber(f)
end

if first[1] and used ~= counted then redis.call('hset', KEYS[2], '#used', used) end
if queued then
  local ttl = tonumber(ARGV[7])
  redis.call('zadd', KEYS[5], 'NX', tonumber(t[1]) * 1000000 + tonumber(t[2]), token)
  redis.call('hset', KEYS[6], token,
    (now + ttl) .. '|' .. asked .. '|' .. ARGV[8] .. '|' .. ARGV[6] .. '|' .. ARGV[9] .. '|' .. ARGV[10] .. '|' .. ARGV[3])
  redis.call('pexpire', KEYS[5], ttl)
  redis.call('pexpire', KEYS[6], ttl)
end
if first[1] then return -math.max(1, tonumber(first[2]) - now) end
return -math.max(1, lease)
