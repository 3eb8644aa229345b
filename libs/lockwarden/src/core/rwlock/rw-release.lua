-- Release a read or write lease, or withdraw a waiter that gave up waiting, and hand the lock
-- off to the oldest places in its queue. The messages it publishes are the wire protocol
-- named in backend/wire.ts.
-- KEYS[1] lock hash   KEYS[2] waiting writers   KEYS[3] wake-up channel
-- KEYS[4] fencing counter   KEYS[5] queue   KEYS[6] waiter records (see rw-acquire.lua)
-- ARGV[1] owner token   ARGV[2] 'r' or 'w'   ARGV[3] 'publish' or 'spublish'
-- Returns 1 when it released the caller's hold, 0 when the caller held nothing.
-- #include next-fence
-- #include last-fence
local token = ARGV[1]
local function withdraw()
  redis.call('zrem', KEYS[2], token)
  if redis.call('zrem', KEYS[5], token) == 1 then redis.call('hdel', KEYS[6], token) end
  return 0
end

if ARGV[2] == 'w' then
  if redis.call('hget', KEYS[1], 'w') ~= token then return withdraw() end
  redis.call('hdel', KEYS[1], 'w', 'wd', 'f', 'wi')
elseif redis.call('hdel', KEYS[1], 'r:' .. token) == 0 then
  return withdraw()
end

local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- Readers still live (a read lease a writer downgraded to, or others of a read): a waiting
-- writer waits on for them; a reader may still join them.
local reading = false
local flat = redis.call('hgetall', KEYS[1])
for i = 1, #flat, 2 do
  if string.sub(flat[i], 1, 2) == 'r:' and tonumber(string.match(flat[i + 1], '^(%d+)')) >= now then
    reading = true
    break
  end
end
-- A reader that leaves others reading, or the write it downgraded from still held, changes
-- nothing for anyone waiting.
if ARGV[2] == 'r' then
  if reading or tonumber(redis.call('hget', KEYS[1], 'wd') or '0') >= now then return 1 end
end

-- Hand the lock off, in arrival order: the readers at the head of the queue together, or the
-- writer at its head once no reader is left. Each is told on its engine's inbox (the
-- channel, ':' and the inbox id, so the same slot), and holds the lock before it hears of
-- it, for the short hand-off lease it asked for, which its watchdog extends once it runs.
local granted = 0
if redis.call('exists', KEYS[5]) == 1 then
  for _, head in ipairs(redis.call('zrange', KEYS[5], 0, -1)) do
    local rec = redis.call('hget', KEYS[6], head)
    local d, kind, lease, waiterId, inbox, seq, instance
    if rec then
      d, kind, lease, waiterId, inbox, seq, instance =
        string.match(rec, '^(%d+)|(%a)|(%d+)|([^|]*)|([^|]*)|(%d+)|(.*)$')
    end
    local live = d and tonumber(d) >= now
    if live and kind == 'w' and (granted > 0 or reading) then break end
    redis.call('zrem', KEYS[5], head)
    redis.call('hdel', KEYS[6], head)
    if live then
      local deadline = now + tonumber(lease)
      local f
      if kind == 'w' then
        f = nextFence(KEYS[4])
        redis.call('hset', KEYS[1], 'w', head, 'wd', deadline, 'f', f, 'wi', instance)
        redis.call('zrem', KEYS[2], head)
      else
        f = lastFence(KEYS[4])
        redis.call('hset', KEYS[1], 'r:' .. head, deadline .. '|' .. instance)
      end
      if redis.call('pttl', KEYS[1]) < tonumber(lease) then redis.call('pexpire', KEYS[1], lease) end
      redis.call(ARGV[3], KEYS[3] .. ':' .. inbox, 'g' .. waiterId .. ':' .. f .. ':' .. lease .. ':' .. seq)
      granted = granted + 1
      if kind == 'w' then break end
    end
  end
end
if granted > 0 then return 1 end

-- Nobody queued (or every place had lapsed): wake whoever may still be listening (waiters
-- that take no places, where the store hands nothing off). A reader wakes them only once the
-- last live reader has left, and only when a writer waits.
if ARGV[2] == 'w' or redis.call('exists', KEYS[2]) == 1 then redis.call(ARGV[3], KEYS[3], 'a') end
return 1
