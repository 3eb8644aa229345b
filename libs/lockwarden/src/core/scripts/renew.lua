-- Renew many leases in one call, each only while its owner still holds it.
-- KEYS[i] the lock key of item i: a mutex (string, see acquire.lua), or a read/write lock hash
-- ARGV[1] one "<kind><lease ms>:<owner token>" entry per item, separated by spaces
--         (kind: m = mutex, r = read, w = write). One packed argument instead of three per
--         item keeps encoding 10 000 renewals cheap on both sides.
-- Returns a list with 1 for each lease renewed and 0 for each hold no longer ours.
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
for kind, leaseText, token in string.gmatch(ARGV[1], '(%a)(%d+):(%S+)') do
  i = i + 1
  local key, lease = KEYS[i], tonumber(leaseText)
  out[i] = 0
  if kind == 'm' then
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
