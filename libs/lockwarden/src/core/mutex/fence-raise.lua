-- With a quorum: lift one node's fencing counter to the token a holder was granted.
-- The token is the highest counter among the nodes that granted the lock. Lifting every
-- granting node's counter to it means that the next holder's majority, which shares at
-- least one node with this one, is granted a higher token: tokens rise across holders.
-- KEYS[1] lock (see acquire.lua)   KEYS[2] fencing counter
-- ARGV[1] owner token   ARGV[2] the fencing token to record
-- Returns 1 when recorded, 0 when this node no longer has the caller as owner.
local held = redis.call('get', KEYS[1])
local owner, rest = string.match(held or '', '^([^|]*)|%d+(|.*)$')
if owner ~= ARGV[1] then return 0 end
-- ARGV[2] is written as sent: a Lua number of this size could be printed in exponent form.
if tonumber(redis.call('get', KEYS[2]) or '0') < tonumber(ARGV[2]) then
  redis.call('set', KEYS[2], ARGV[2], 'PX', 60000)
end
redis.call('set', KEYS[1], owner .. '|' .. ARGV[2] .. rest, 'KEEPTTL')
return 1
