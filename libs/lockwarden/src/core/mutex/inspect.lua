-- Describe one lock for operators, without ever returning an owner token.
-- KEYS[1] mutex (see acquire.lua)   KEYS[2] mutex fencing counter   KEYS[3] mutex fair queue
-- KEYS[4] read/write hash   KEYS[5] waiting writers   KEYS[6] read/write fencing counter
-- KEYS[7] read/write queue (readers and writers with a place; a writer may be in both)
-- Returns { kind, ttl ms, fencing token ('' for none minted), waiters, instance, ttl ms, ... }
-- with kind 'mutex', 'write', 'read' or '' (free); one instance/ttl pair per holder.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local held = redis.call('get', KEYS[1])
if held then
  local f, i = string.match(held, '^[^|]*|(%d*)|([^|]*)')
  local ttl = redis.call('pttl', KEYS[1])
  -- A plain grant whose holder has not read its token has none yet: '' says so.
  return { 'mutex', ttl, tonumber(f) or '', redis.call('zcard', KEYS[3]), i or '', ttl }
end

-- Waiters of the read/write lock: every place in its queue, and the writers without one yet.
local rwWaiters = redis.call('zcard', KEYS[7])
for _, w in ipairs(redis.call('zrange', KEYS[5], 0, -1)) do
  if not redis.call('zscore', KEYS[7], w) then rwWaiters = rwWaiters + 1 end
end
local out = { '', 0, 0, rwWaiters }
local flat = redis.call('hgetall', KEYS[4])
local writer, writerDeadline, writerInstance, writerFence
for i = 1, #flat, 2 do
  local field, value = flat[i], flat[i + 1]
  if field == 'w' then writer = value
  elseif field == 'wd' then writerDeadline = tonumber(value)
  elseif field == 'wi' then writerInstance = value
  elseif field == 'f' then writerFence = tonumber(value)
  elseif string.sub(field, 1, 2) == 'r:' then
    local deadline, instance = string.match(value, '^(%d+)|(.*)$')
    deadline = tonumber(deadline)
    if deadline >= now then
      out[1] = 'read'
      out[#out + 1] = instance
      out[#out + 1] = deadline - now
      if deadline - now > out[2] then out[2] = deadline - now end
    end
  end
end
if writer and writerDeadline and writerDeadline >= now then
  return { 'write', writerDeadline - now, writerFence or 0, out[4], writerInstance or '', writerDeadline - now }
end
if out[1] == 'read' then
  out[3] = tonumber(redis.call('get', KEYS[6]) or '0')
  return out
end
out[4] = out[4] + redis.call('zcard', KEYS[3])
out[3] = tonumber(redis.call('get', KEYS[2]) or '0')
return out
