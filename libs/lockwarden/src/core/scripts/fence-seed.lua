-- Fast grants only (a plain SET NX and INCR, see redis/fast-grant.ts): a grant whose INCR
-- found no seeded counter (it returned a small number: the counter lapsed, Redis restarted,
-- or an older version wrote it) takes its token from here instead, so tokens keep rising
-- from the server clock.
-- KEYS[1] lock (see acquire.lua)   KEYS[2] fencing counter
-- ARGV[1] owner token
-- Returns the caller's new fencing token, or 0 when it no longer holds the lock (the counter
-- the INCR made then still gets a TTL: no key outlives its use).
-- #include next-fence
local held = redis.call('get', KEYS[1])
if not held or string.sub(held, 1, #ARGV[1] + 1) ~= ARGV[1] .. '|' then
  if redis.call('pttl', KEYS[2]) == -1 then redis.call('pexpire', KEYS[2], 60000) end
  return 0
end
return nextFence(KEYS[2])
