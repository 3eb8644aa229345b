-- The next fencing token, as a string (Lua prints numbers with 14 digits, too few for these).
-- A counter that is missing (a key never locked, one idle for a minute, or one a restart
-- without persistence wiped) starts from the server clock in microseconds: above every
-- token it handed out before, while the clock does not go back by more than the counter's
-- idle time and grants never outpaced one per microsecond. So the counter need not outlive
-- its use: it expires a minute after the last grant (no key is left behind per lock name).
local function nextFence(counter)
  local f = redis.call('incr', counter)
  if f > 1 then
    redis.call('pexpire', counter, 60000)
    return string.format('%d', f)
  end
  local t = redis.call('time')
  local seed = t[1] .. string.format('%06d', tonumber(t[2]))
  redis.call('set', counter, seed, 'PX', 60000)
  return seed
end
