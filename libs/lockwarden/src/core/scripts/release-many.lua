-- Release several mutexes in one call, one server only (redis/turn-batch.ts): the releases
-- that concurrent flows asked for in the same turn of the event loop. Each is release.lua's, in order.
-- KEYS    five per lock, as release.lua takes them: lock, counter, queue, waiters, channel
-- ARGV[1] 'publish'   ARGV[2..] the owner token of each lock, in order
-- Returns a list with release.lua's reply for each lock.
-- #include next-fence
-- #include release-one
local out = {}
for i = 1, #ARGV - 1 do
  local k = (i - 1) * 5
  out[i] = releaseOne(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5], ARGV[i + 1], ARGV[1])
end
return out
