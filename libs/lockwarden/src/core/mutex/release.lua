-- Release a mutex held by ARGV[1] and hand it off to the first live fair waiter, if any.
-- Also withdraws ARGV[1] from the fair queue when it was only waiting (a cancelled acquire).
-- KEYS[1] lock (see acquire.lua)   KEYS[2] fencing counter   KEYS[3] fair queue
-- KEYS[4] waiter records   KEYS[5] wake-up channel (named here so it shares the lock's slot)
-- ARGV[1] owner token   ARGV[2] 'publish' or 'spublish'
-- Returns 1 when it released the caller's lock, 0 when the caller did not hold it.
-- #include next-fence
-- #include release-one
return releaseOne(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[1], ARGV[2])
