-- Fast grants only (a plain SET NX and INCR, see store/fast-grant.ts): a grant whose INCR
-- found no seeded counter (it returned a small number: the counter expired between the
-- pipeline's SET NX and its INCR, or a counter written by an older version) takes its
-- token from here instead, so tokens keep rising from the server clock.
-- KEYS[1] lock (see acquire.lua)   KEYS[2] fencing counter
-- ARGV[1] owner token
-- Returns the caller's new fencing token, or 0 when it no longer holds the lock.
-- #include next-fence
local held = redis.call('get', KEYS[1])
if not held or string.sub(held, 1, #ARGV[1] + 1) ~= ARGV[1] .. '|' then return 0 end
return nextFence(KEYS[2])
