-- Renew many mutex leases in one call, each only while its owner still holds it.
-- KEYS[i] lock hash i
-- ARGV[2i-1] owner token of lock i   ARGV[2i] new lease of lock i, in ms
-- Returns a list with 1 for each lease renewed and 0 for each lock no longer held.
local out = {}
for i = 1, #KEYS do
  if redis.call('hget', KEYS[i], 'o') == ARGV[2 * i - 1] then
    redis.call('pexpire', KEYS[i], ARGV[2 * i])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
