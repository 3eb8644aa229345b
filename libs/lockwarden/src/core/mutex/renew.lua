-- Renew many leases in one call, each only while its owner still holds it.
-- KEYS    the lock key of each item in order: a mutex (string, see acquire.lua), or a
--         read/write lock hash; a semaphore holder passes two, its holders zset and its
--         permits hash (see sem-acquire.lua)
-- ARGV[1] one "<kind><lease ms>:<owner token>" entry per item, separated by spaces
--         (kind: m = mutex, r = read, w = write, s = semaphore permits). One packed argument
--         instead of three per item keeps encoding 10 000 renewals cheap on both sides.
-- Returns a list with 1 for each lease renewed and 0 for each lease no longer ours.
local now
local function serverNow()
  if not now then
    local t = redis.call('time')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now
end

local out = {}
local i = 0
local k = 0
for kind, leaseText, token in string.gmatch(ARGV[1], '(%a)(%d+):(%S+)') do
  i = i + 1
  k = k + 1
  local key, lease = KEYS[k], tonumber(leaseText)
  out[i] = 0
  if kind == 's' then
    -- Only a holder still live by server time: a lapsed one's permits may be someone else's now.
    local permits = KEYS[k + 1]
    k = k + 1
    local t = serverNow()
    local deadline = tonumber(redis.call('zscore', key, token))
    if deadline and deadline >= t then
      redis.call('zadd', key, 'XX', t + lease, token)
      if redis.call('pttl', key) < lease then redis.call('pexpire', key, lease) end
      if redis.call('pttl', permits) < lease then redis.call('pexpire', permits, lease) end
      out[i] = 1
    end
  elseif kind == 'm' then
    local held = redis.call('get', key)
    if held and string.sub(held, 1, #token + 1) == token .. '|' then
      redis.call('pexpire', key, lease)
      out[i] = 1
    end
  else
    local t = serverNow()
    local renewed = false
    if kind == 'w' then
      if redis.call('hget', key, 'w') == token and tonumber(redis.call('hget', key, 'wd')) >= t then
        redis.call('hset', key, 'wd', t + lease)
        renewed = true
      end
    else
      local field = 'r:' .. token
      local value = redis.call('hget', key, field)
      if value and tonumber(string.match(value, '^(%d+)')) >= t then
        redis.call('hset', key, field, (t + lease) .. string.match(value, '(|.*)$'))
        renewed = true
      end
    end
    if renewed then
      if redis.call('pttl', key) < lease then redis.call('pexpire', key, lease) end
      out[i] = 1
    end
  end
end
return out
