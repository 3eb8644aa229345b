-- Fenced, once-only recording of a draw.
-- KEYS[1] the draw's result (a JSON string)
-- KEYS[2] the highest fencing token that has claimed this draw
-- ARGV[1] the caller's fencing token
-- ARGV[2] 'claim' (starting the draw) or 'record' (writing its result)
-- ARGV[3] the result, as JSON (record only)
-- A holder claims the draw as it starts, so a superseded holder that wakes up late is
-- refused even when the newer one has not written yet.
-- Returns 'claimed' / 'recorded', 'stale' (a newer holder claimed it) or 'duplicate'.
local token = tonumber(ARGV[1])
local newest = tonumber(redis.call('get', KEYS[2]) or '0')
if token < newest then
  return 'stale'
end
if token > newest then
  redis.call('set', KEYS[2], token)
end
if redis.call('exists', KEYS[1]) == 1 then
  return 'duplicate'
end
if ARGV[2] == 'claim' then
  return 'claimed'
end
redis.call('set', KEYS[1], ARGV[3])
return 'recorded'
