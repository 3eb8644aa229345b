-- Releases one mutex held by `token`, and hands it off to the first live queued waiter, if any;
-- withdraws `token` from the fair queue when it was only waiting (a cancelled acquire). The
-- messages it publishes are the wire protocol named in backend/wire.ts. Needs next-fence.
-- Returns 1 when it released the caller's lock, 0 when the caller did not hold it.
local function releaseOne(lock, fence, queue, waiters, channel, token, publish)
  local held = redis.call('get', lock)
  if not held or string.sub(held, 1, #token + 1) ~= token .. '|' then
    if redis.call('zrem', queue, token) == 1 then
      redis.call('hdel', waiters, token)
    end
    return 0
  end
  redis.call('del', lock)
  -- "|w" at the end: someone failed to take it while it was held, and may be listening or
  -- queued. Unmarked, nobody waits: the uncontended release ends here, with two calls.
  if string.sub(held, -2) ~= '|w' then return 1 end

  if redis.call('exists', queue) == 1 then
    local t = redis.call('time')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    while true do
      local head = redis.call('zrange', queue, 0, 0)[1]
      if not head then break end
      local rec = redis.call('hget', waiters, head)
      redis.call('zrem', queue, head)
      redis.call('hdel', waiters, head)
      if rec then
        local deadline, lease, waiterId, inbox, seq, instance =
          string.match(rec, '^(%d+)|(%d+)|([^|]*)|([^|]*)|(%d+)|(.*)$')
        if deadline and tonumber(deadline) >= now then
          -- Hand-off: the waiter owns the lock before it even hears about it, for the
          -- short hand-off lease it asked for, which its watchdog extends once it runs. A
          -- waiter that died in the queue holds the lock up for that short lease at most.
          -- Marked as waited for: others may still be queued behind it.
          local f = nextFence(fence)
          redis.call('set', lock, head .. '|' .. f .. '|' .. instance .. '|w', 'PX', lease)
          -- Only the waiter's own engine is told, on its inbox: the lock's channel and the
          -- inbox id, so the same hash tag and slot as the keys. `seq` names the waiter's
          -- last attempt seen here, sent before this grant: its lease counts from then.
          redis.call(publish, channel .. ':' .. inbox, 'g' .. waiterId .. ':' .. f .. ':' .. lease .. ':' .. seq)
          return 1
        end
      end
    end
  end

  -- Nobody queued (or every place had lapsed): wake whoever may still be listening.
  redis.call(publish, channel, 'r')
  return 1
end
