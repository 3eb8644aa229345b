-- Mint the fencing token of a mutex on its first read (handle.fencingToken()), only while the
-- caller still holds the lock. A plain grant (SET NX PX) takes no token; the first read
-- takes the next one from the counter and writes it into the lock's value, so later reads,
-- inspect() and a confirming acquire see the same one. Minting at the read gives the order
-- minting at the grant would: a later holder could only take the lock after this one lost
-- it, so after this mint, and its own mint comes later still.
-- KEYS[1] lock (see acquire.lua)   KEYS[2] fencing counter
-- ARGV[1] owner token
-- Returns the caller's fencing token, or 0 when it no longer holds the lock (nothing minted).
-- #include next-fence
local held = redis.call('get', KEYS[1])
local owner, fence, rest = string.match(held or '', '^([^|]*)|(%d*)(|.*)$')
if owner ~= ARGV[1] then return 0 end
if fence ~= '' then return tonumber(fence) end
local f = nextFence(KEYS[2])
redis.call('set', KEYS[1], owner .. '|' .. f .. rest, 'KEEPTTL')
return tonumber(f)
