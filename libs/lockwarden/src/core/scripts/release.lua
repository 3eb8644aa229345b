-- Release a mutex held by ARGV[1] and pass it to the first live fair waiter, if any.
-- The messages it publishes are the wire protocol named in scripts/wire.ts.
-- Also withdraws ARGV[1] from the fair queue when it was only waiting (a cancelled acquire).
-- KEYS[1] lock hash   KEYS[2] fencing counter   KEYS[3] fair queue   KEYS[4] waiter records
-- KEYS[5] wake-up channel (named here so it shares the lock's slot)
-- ARGV[1] owner token   ARGV[2] 'publish' or 'spublish'
-- Returns 1 when it released the caller's lock, 0 when the caller did not hold it.
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
if redis.call('hget', KEYS[1], 'o') ~= ARGV[1] then
  if redis.call('zrem', KEYS[3], ARGV[1]) == 1 then
    redis.call('hdel', KEYS[4], ARGV[1])
  end
  return 0
end
redis.call('del', KEYS[1])

if redis.call('exists', KEYS[3]) == 1 then
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  while true do
    local head = redis.call('zrange', KEYS[3], 0, 0)[1]
    if not head then break end
    local rec = redis.call('hget', KEYS[4], head)
    redis.call('zrem', KEYS[3], head)
    redis.call('hdel', KEYS[4], head)
    if rec then
      local deadline, lease, waiterId, instance = string.match(rec, '^(%d+)|(%d+)|([^|]*)|(.*)$')
      if tonumber(deadline) >= now then
        -- Lock passing: the waiter owns the lock before it even hears about it, for the
        -- short hand-off lease it asked for. It confirms to get its full lease, so a waiter
        -- that died in the queue holds the lock up for that short lease at most.
        local f = nextFence(KEYS[2])
        redis.call('hset', KEYS[1], 'o', head, 'f', f, 'i', instance)
        redis.call('pexpire', KEYS[1], lease)
        redis.call(ARGV[2], KEYS[5], 'g' .. waiterId .. ':' .. f)
        return 1
      end
    end
  end
end

redis.call(ARGV[2], KEYS[5], 'r')
return 1
