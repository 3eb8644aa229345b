-- Release a mutex held by ARGV[1] and pass it to the first live fair waiter, if any.
-- The messages it publishes are the wire protocol named in scripts/wire.ts.
-- Also withdraws ARGV[1] from the fair queue when it was only waiting (a cancelled acquire).
-- KEYS[1] lock (see acquire.lua)   KEYS[2] fencing counter   KEYS[3] fair queue
-- KEYS[4] waiter records   KEYS[5] wake-up channel (named here so it shares the lock's slot)
-- ARGV[1] owner token   ARGV[2] 'publish' or 'spublish'
-- Returns 1 when it released the caller's lock, 0 when the caller did not hold it.
-- #include next-fence
local held = redis.call('get', KEYS[1])
local token = ARGV[1]
if not held or string.sub(held, 1, #token + 1) ~= token .. '|' then
  if redis.call('zrem', KEYS[3], token) == 1 then
    redis.call('hdel', KEYS[4], token)
  end
  return 0
end
redis.call('del', KEYS[1])
-- "|w" at the end: someone failed to take it while it was held, and may be listening or
-- queued. Unmarked, nobody waits: the uncontended release ends here, with two calls.
if string.sub(held, -2) ~= '|w' then return 1 end

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
        -- that died in the queue holds the lock up for that short lease at most. Marked as
        -- waited for: others may still queue or listen behind it.
        local f = nextFence(KEYS[2])
        redis.call('set', KEYS[1], head .. '|' .. f .. '|' .. instance .. '|w', 'PX', lease)
        redis.call(ARGV[2], KEYS[5], 'g' .. waiterId .. ':' .. f)
        return 1
      end
    end
  end
end

-- Nobody queued (or every place had lapsed): wake whoever may still be listening.
redis.call(ARGV[2], KEYS[5], 'r')
return 1
