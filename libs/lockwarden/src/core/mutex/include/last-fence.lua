-- The fencing token a read carries, as a string: the last write's token. A counter idle for
-- a minute has expired: seed it from the clock, as nextFence would, so the read's token is
-- above every write before it and below the next one.
local function lastFence(counter)
  local f = redis.call('get', counter)
  if f then
    redis.call('pexpire', counter, 60000)
    return f
  end
  local t = redis.call('time')
  f = t[1] .. string.format('%06d', tonumber(t[2]))
  redis.call('set', counter, f, 'PX', 60000)
  return f
end
