-- Hand a held mutex straight off to a waiter of the releaser's own process (mutex/mutex-lease.ts):
-- one call in place of a release, a wake-up in another process, its attempt and the renewal
-- of its short hand-off lease. The next holder's process is the releaser's, alive and
-- running this call, so its lease starts in full now.
-- Once the process's run of hand-offs is over (ARGV[7]), the lock goes to the queue instead,
-- as release.lua gives it, if any other place waits there; with none, the run goes on.
-- KEYS[1] lock (see acquire.lua)   KEYS[2] fencing counter   KEYS[3] queue
-- KEYS[4] waiter records   KEYS[5] wake-up channel (see release.lua)
-- ARGV[1] the releasing owner token   ARGV[2] the next holder's owner token
-- ARGV[3] its lease ms   ARGV[4] the instance id   ARGV[5] '1' to mint its fencing token now
-- ARGV[6] '1' when the next holder holds its engine's place in the queue, which it gives up
--         now that it holds the lock
-- ARGV[7] '1' when the run is over   ARGV[8] 'publish' or 'spublish'
-- Returns the next holder's fencing token (> 0), 0 when it holds the lock with its token to be
-- minted on first read (fence-mint.lua), -1 when the caller no longer held the lock (nothing
-- done), or -2 when the lock went to the queue instead.
-- #include next-fence
-- #include release-one
local held = redis.call('get', KEYS[1])
if not held or string.sub(held, 1, #ARGV[1] + 1) ~= ARGV[1] .. '|' then return -1 end
local next = ARGV[2]
if ARGV[7] == '1' then
  -- A place other than the next holder's own: another process (or a fair waiter) waits.
  local first = redis.call('zrange', KEYS[3], 0, 1)
  if first[1] and (first[1] ~= next or first[2]) then
    releaseOne(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[1], ARGV[8])
    return -2
  end
end
if ARGV[6] == '1' and redis.call('zrem', KEYS[3], next) == 1 then redis.call('hdel', KEYS[4], next) end
-- The mark stays as it was: whoever waited in other processes still waits.
local mark = string.sub(held, -2) == '|w' and '|w' or ''
local f = ARGV[5] == '1' and nextFence(KEYS[2]) or ''
redis.call('set', KEYS[1], next .. '|' .. f .. '|' .. ARGV[4] .. mark, 'PX', ARGV[3])
return tonumber(f) or 0
