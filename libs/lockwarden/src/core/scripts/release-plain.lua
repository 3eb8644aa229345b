-- The release of a mutex nobody waited for, with the one key it touches (the fewer keys a
-- script declares, the less Redis spends setting it up: measured, 2.8 µs against 3.5-3.8
-- for release.lua's five). A lock someone waited for (its value ends in "|w") is left as it
-- is: its release must wake or hand over, which release.lua does with all five keys.
-- KEYS[1] lock (see acquire.lua)
-- ARGV[1] owner token
-- Returns 1 when it released the caller's lock, 0 when the caller does not hold it, 2 when
-- the caller holds it and someone waited (nothing done: send release.lua).
local held = redis.call('get', KEYS[1])
if not held or string.sub(held, 1, #ARGV[1] + 1) ~= ARGV[1] .. '|' then return 0 end
if string.sub(held, -2) == '|w' then return 2 end
redis.call('del', KEYS[1])
return 1
