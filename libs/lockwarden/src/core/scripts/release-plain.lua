-- The releases of mutexes nobody waited for, one or several in one call (the releases of one
-- event-loop turn, on one server: redis/turn-batch.ts), with the one key each touches: the
-- fewer keys a script declares, the less Redis and the client spend on it (measured: 2.8 µs
-- against 3.5-3.8 for release.lua's five). A lock someone waited for (its value ends in
-- "|w") is left as it is: its release must wake or hand over, which release.lua does with
-- all five keys.
-- KEYS    the lock of each release (see acquire.lua)
-- ARGV    the owner token of each, in order
-- Returns a list with, per lock: 1 when it released the caller's lock, 0 when the caller does
-- not hold it, 2 when the caller holds it and someone waited (nothing done: send release.lua).
local out = {}
for i = 1, #KEYS do
  local held, token = redis.call('get', KEYS[i]), ARGV[i]
  if not held or string.sub(held, 1, #token + 1) ~= token .. '|' then
    out[i] = 0
  elseif string.sub(held, -2) == '|w' then
    out[i] = 2
  else
    redis.call('del', KEYS[i])
    out[i] = 1
  end
end
return out
