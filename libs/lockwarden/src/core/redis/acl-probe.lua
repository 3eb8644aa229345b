-- Which of the commands Lockwarden needs the connection's ACL user may not run. Asked of the ACL
-- itself (redis.acl_check_cmd, Redis 7 and Valkey): nothing is run, so the probe writes nothing
-- and leaves nothing to clean up, and it may ask of commands a script cannot send (SUBSCRIBE,
-- EVALSHA, WAIT, SCRIPT LOAD). Each is asked with its arguments whole, as Lockwarden sends it:
-- Redis 7.0 reads a command's keys from its arguments without checking their number first, and
-- crashes on too few.
-- KEYS[1] a key under the engine's key prefix   KEYS[2] a channel under it (one hash tag). The
--         script runs only where the user may write KEYS[1]: a refusal of a command that names
--         it is the command's.
-- ARGV    pairs: the command as ACL rules name it ('time', 'script|load'), then the command as
--         sent, its words separated by spaces, with $k for KEYS[1] and $c for KEYS[2]
-- Returns { command, detail, ... } for each refused: detail is '' or, for a publish, the error
-- the refused publish answers with (refused, it runs not), which says whether the command or
-- the channel was refused. A command the server does not have (DELEX before Redis 8.4) is left
-- out: Lockwarden does without it there.
local refused = {}
for i = 1, #ARGV, 2 do
  local args = {}
  for word in string.gmatch(ARGV[i + 1], '%S+') do
    if word == '$k' then
      word = KEYS[1]
    elseif word == '$c' then
      word = KEYS[2]
    end
    args[#args + 1] = word
  end
  local known, allowed = pcall(redis.acl_check_cmd, unpack(args))
  if known and not allowed then
    local detail = ''
    if args[1] == 'publish' or args[1] == 'spublish' then
      local reply = redis.pcall(unpack(args))
      if type(reply) == 'table' and reply.err then detail = reply.err end
    end
    refused[#refused + 1] = ARGV[i]
    refused[#refused + 1] = detail
  end
end
return refused
