-- Hand a held mutex straight off to a waiter of the releaser's own process (mutex/mutex-lease.ts):
-- one call in place of a release, a wake-up in another process, its attempt and the renewal
-- of its short hand-off lease. The next holder's process is the releaser's, alive and
-- running this call, so its lease starts in full now.
-- KEYS[1] lock (see acquire.lua)   KEYS[2] fencing counter
-- KEYS[3] queue   KEYS[4] waiter records: only when the next holder held its engine's place in
--         the queue, which it gives up now that it holds the lock
-- ARGV[1] the releasing owner token   ARGV[2] the next holder's owner token
-- ARGV[3] its lease ms   ARGV[4] the instance id   ARGV[5] '1' to mint its fencing token now
-- Returns the next holder's fencing token (> 0), 0 when it holds the lock with its token to be
-- minted on first read (fence-mint.lua), or -1 when the caller no longer held the lock
-- (nothing done).
-- #include next-fence
local held = redis.call('get', KEYS[1])
if not held or string.sub(held, 1, #ARGV[1] + 1) ~= ARGV[1] .. '|' then return -1 end
local next = ARGV[2]
if #KEYS == 4 and redis.call('zrem', KEYS[3], next) == 1 then redis.call('hdel', KEYS[4], next) end
-- The mark stays as it was: whoever waited in other processes still waits.
local mark = string.sub(held, -2) == '|w' and '|w' or ''
local f = ARGV[5] == '1' and nextFence(KEYS[2]) or ''
redis.call('set', KEYS[1], next .. '|' .. f .. '|' .. ARGV[4] .. mark, 'PX', ARGV[3])
return tonumber(f) or 0
