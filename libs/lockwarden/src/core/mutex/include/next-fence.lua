-- The next fencing token, as a string (Lua prints numbers with 14 digits, too few for these):
-- max(counter + 1, server clock in microseconds). A token that follows the clock rises
-- across everything that can set a counter back: a failover to a replica that had not yet
-- seen the last grants, a restart that wiped or restored the counter, a counter that expired
-- while idle. Assumptions: a server's clock (or the next master's) is not behind the last
-- grant's by more than the time the counter was away, and grants never outpace one per
-- microsecond. So the counter need not outlive its use: it expires a minute after the last
-- grant (no key is left behind per lock name).
local function nextFence(counter)
  local t = redis.call('time')
  local f = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local last = tonumber(redis.call('get', counter) or '0') or 0
  if last >= f then f = last + 1 end
  local s = string.format('%d', f)
  redis.call('set', counter, s, 'PX', 60000)
  return s
end
