-- Uncontended mutex grants for several locks in one call, one server only (redis/turn-batch.ts):
-- the first attempts that concurrent flows made in the same turn of the event loop, and the
-- first grant on a name this process has not granted lately. Each is SET NX PX, and the
-- token from INCR of the counter, seeded from the server clock when it was missing. The
-- counter then lives a minute from this grant, so the plain grant of redis/fast-grant.ts,
-- which never seeds, finds it. A busy lock is left as it is: its caller runs acquire.lua,
-- which marks it waited for.
-- KEYS    two per lock: the lock, its fencing counter
-- ARGV    two per lock: the value "owner||instance", the lease in ms
-- Returns a list with each lock's fencing token, or -1 where the lock was busy.
local out = {}
for i = 1, #KEYS / 2 do
  if redis.call('set', KEYS[i * 2 - 1], ARGV[i * 2 - 1], 'NX', 'PX', ARGV[i * 2]) then
    local f = redis.call('incr', KEYS[i * 2])
    if f < 1000000000000 then
      local t = redis.call('time')
      local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
      if now > f then f = now end
      redis.call('set', KEYS[i * 2], string.format('%d', f), 'PX', 60000)
    else
      redis.call('pexpire', KEYS[i * 2], 60000)
    end
    out[i] = f
  else
    out[i] = -1
  end
end
return out
