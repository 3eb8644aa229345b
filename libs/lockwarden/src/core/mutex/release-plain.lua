-- The releases of mutexes nobody waited for, one or several in one call (the releases of one
-- event-loop turn, on one server: held-releases.ts), with the one key each touches: the
-- fewer keys a script declares, the less Redis and the client spend on it (measured: 2.7-2.8
-- µs against 3.5-3.8 for release.lua's five). A lock someone waited for (its value ends in
-- "|w") is left as it is: its release must wake or hand off, which release.lua does with
-- all five keys.
-- KEYS    the lock of each release (see acquire.lua)
-- ARGV    the owner token of each, in order
-- Per lock: 1 when it released the caller's lock, 0 when the caller does not hold it, 2 when
-- the caller holds it and someone waited (nothing done: send release.lua). Returns that
-- number for one lock, and a list of them for several.
local function releaseOne(lock, token)
  local held = redis.call('get', lock)
  -- The owner is the value's first field: "<token>|". Bytes 124 and 119 are '|' and 'w'.
  if not held or string.find(held, token, 1, true) ~= 1 or string.byte(held, #token + 1) ~= 124 then
    return 0
  end
  if string.byte(held, -1) == 119 and string.byte(held, -2) == 124 then return 2 end
  redis.call('del', lock)
  return 1
end

-- One lock, the serial case: a number, not a list (measured: a list costs ~0.4 µs more).
if #KEYS == 1 then return releaseOne(KEYS[1], ARGV[1]) end
local out = {}
for i = 1, #KEYS do out[i] = releaseOne(KEYS[i], ARGV[i]) end
return out
