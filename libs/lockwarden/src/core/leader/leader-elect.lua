-- Record a new leadership term, unless a newer (or the same) one is recorded; append it to
-- the term log under the id "<fencing token>-0", so the log's order is the tokens' order,
-- and announce it. Its start time is the server's: clients' clocks disagree.
-- KEYS[1] latest term (hash: instanceId, fencingToken, since, state)
-- KEYS[2] term log (stream)   KEYS[3] announcement channel
-- ARGV[1] instance id   ARGV[2] fencing token   ARGV[3] 'publish' or 'spublish'
-- ARGV[4] how many entries the log keeps (about)
-- Returns the term's start (server ms), or -1 when a newer term is already recorded.
local last = tonumber(redis.call('hget', KEYS[1], 'fencingToken') or '0')
if tonumber(ARGV[2]) <= last then return -1 end
local t = redis.call('time')
local since = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('del', KEYS[1])
redis.call('hset', KEYS[1], 'instanceId', ARGV[1], 'fencingToken', ARGV[2], 'since', since, 'state', 'leading')
redis.call('xadd', KEYS[2], 'MAXLEN', '~', ARGV[4], ARGV[2] .. '-0', 'type', 'elected', 'instanceId', ARGV[1], 'since', since)
redis.call(ARGV[3], KEYS[3], 'elected:' .. ARGV[2])
return since
