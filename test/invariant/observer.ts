import { Redis } from 'ioredis';

/**
 * The invariant suite's observer: a Redis the lock library never sees, where
 * every critical section records its entry and exit. The check runs on the
 * observer itself, so it sees the true order of entries across processes.
 *
 * An entry conflicts with a section still inside the same key when either of
 * them writes (a mutex section counts as a writer). A conflict is allowed only
 * when the earlier holder had already been told its lock was **lost** (its
 * lease ended: a `lost` event, never a mere interruption such as a client
 * going away or a shutdown starting), or when the earlier holder's lock was
 * taken away from outside: its key was deleted (forceUnlock, DEL) or its Redis
 * restarted. The test records those as "every fencing token up to N of this key (or of
 * every key) was revoked", so a holder that acquired before the deletion but reported its
 * entry after it still counts as revoked. A holder frozen by a pause (SIGSTOP) past its
 * lease cannot be told anything while stopped: a conflict with it is allowed, and checked
 * when it finishes, which it must not do before it has read that its lock was lost. An
 * entry that reaches the observer while its process is stopped was sent before the stop, so
 * it counts as frozen too, however late it lands. An entrant that had already been told its
 * own lock was lost (a stream's body that starts producing after a pause) is no live holder:
 * it conflicts with no one, and whoever enters after it finds it in the lost set.
 * Everything else is a violation.
 */
const ENTER = `
local keyRevoked = tonumber(redis.call('get', KEYS[3]) or '0')
local allRevoked = tonumber(redis.call('get', KEYS[4]) or '0')
local mine = ARGV[2]
-- While the test is taking a lock away, the holders it is revoking are not known yet.
local revoking = redis.call('exists', KEYS[7], KEYS[8]) > 0
-- An entrant whose own lock was taken away from outside has not been told yet either.
local mineRevoked = tonumber(ARGV[4]) <= keyRevoked or tonumber(ARGV[4]) <= allRevoked
-- An entrant already told its lock was lost holds nothing live.
local mineLost = redis.call('sismember', KEYS[2], ARGV[1]) == 1
-- Its process is stopped: the entry was sent before the stop and lands only now.
local mineFrozen = redis.call('sismember', KEYS[11], string.match(ARGV[1], '^[^:]+')) == 1
if mineFrozen then redis.call('sadd', KEYS[9], ARGV[1]) end
local inside = redis.call('hgetall', KEYS[1])
for i = 1, #inside, 2 do
  local id, rec = inside[i], inside[i + 1]
  local mode, token = string.match(rec, '^(%a)|(%d+)$')
  token = tonumber(token)
  if mine == 'w' or mode == 'w' then
    local revoked = token <= keyRevoked or token <= allRevoked or mineRevoked
    if revoked or revoking or mineLost or redis.call('sismember', KEYS[2], id) == 1 then
      -- taken away from outside, or one of the two already told it was lost: allowed
    elseif redis.call('sismember', KEYS[9], id) == 1 then
      -- Frozen by a pause (SIGSTOP): it cannot act, so it is checked when it exits instead.
      redis.call('sadd', KEYS[10], id)
    elseif mineFrozen then
      -- The frozen one is the entrant: it was inside before the other, unseen.
      redis.call('sadd', KEYS[10], ARGV[1])
    else
      redis.call('rpush', KEYS[5], ARGV[3] .. ': ' .. ARGV[1] .. ' (' .. mine .. ') entered while ' .. id .. ' (' .. mode .. ') was inside, holding a lock it had not been told was lost')
    end
  end
end
redis.call('hset', KEYS[1], ARGV[1], mine .. '|' .. ARGV[4])
redis.call('incr', KEYS[6])
return #inside / 2
`;

/**
 * A section that was frozen by a pause while another holder entered its key must have been
 * told its lock was lost by the time it finishes: its first look at its signal after
 * resuming (a protected write checks it) reads it as lost. A section whose last look came
 * before its process was stopped finished then, still holding its lock: only its exit was on
 * its way (or not yet written) when the process stopped. ARGV[3] is when it last looked, in
 * ms of the wall clock, or empty for "now" (read here, in µs: a whole stop and resume can fit
 * in one millisecond); its process's last stop is in KEYS[5], in µs of the server's clock
 * (one machine, one clock), recorded after the stop.
 */
const EXIT = `
if redis.call('sismember', KEYS[2], ARGV[1]) == 1 and redis.call('sismember', KEYS[3], ARGV[1]) == 0 then
  local stoppedAt = tonumber(redis.call('hget', KEYS[5], string.match(ARGV[1], '^[^:]+')) or '0')
  local t = redis.call('time')
  local looked = ARGV[3] == '' and tonumber(t[1]) * 1000000 + tonumber(t[2]) or tonumber(ARGV[3]) * 1000
  if looked >= stoppedAt then
    redis.call('rpush', KEYS[4], ARGV[2] .. ': ' .. ARGV[1] .. ' resumed from a pause and finished without being told that another holder had taken its lock')
  end
end
redis.call('hdel', KEYS[1], ARGV[1])
return 1
`;

/** One step, so no entry lands between marking the process stopped and freezing its sections. */
const FREEZE = `
redis.call('sadd', KEYS[1], ARGV[1])
local t = redis.call('time')
-- As a string: Lua would print the number with 14 digits, too few for microseconds.
redis.call('hset', KEYS[3], ARGV[1], t[1] .. string.format('%06d', tonumber(t[2])))
local prefix = ARGV[1] .. ':'
for _, hash in ipairs(redis.call('keys', 'in:*')) do
  for _, id in ipairs(redis.call('hkeys', hash)) do
    if string.sub(id, 1, #prefix) == prefix then redis.call('sadd', KEYS[2], id) end
  end
end
return 1
`;

export type SectionMode = 'r' | 'w';

export class Observer {
  readonly client: Redis;

  constructor(url: string) {
    this.client = new Redis(url, { lazyConnect: false });
    this.client.defineCommand('observeEnter', { numberOfKeys: 11, lua: ENTER });
    this.client.defineCommand('observeFreeze', { numberOfKeys: 3, lua: FREEZE });
    this.client.defineCommand('observeExit', { numberOfKeys: 5, lua: EXIT });
  }

  async enter(key: string, id: string, mode: SectionMode, fencingToken: number): Promise<void> {
    await (this.client as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>).observeEnter(
      `in:${key}`,
      'lost',
      `revoked:${key}`,
      'revoked:*',
      'violations',
      'entries',
      `revoking:${key}`,
      'revoking:*',
      'frozen',
      'overlapped',
      'stopped',
      id,
      mode,
      key,
      String(fencingToken),
    );
  }

  /** The section `id` finished; `lookedAt` (Date.now()) is when it last looked at its signal, by default now. */
  async exit(key: string, id: string, lookedAt?: number): Promise<void> {
    await (this.client as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>).observeExit(
      `in:${key}`,
      'overlapped',
      'lost',
      'violations',
      'stopped-at',
      id,
      key,
      lookedAt === undefined ? '' : String(lookedAt),
    );
  }

  /**
   * `instance`'s process was just stopped: marks its sections inside now as frozen, and
   * every entry of it that lands until `thaw` (sent before the stop, still on its way).
   */
  async freeze(instance: string): Promise<void> {
    await (this.client as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>).observeFreeze(
      'stopped',
      'frozen',
      'stopped-at',
      instance,
    );
  }

  /** `instance`'s process is about to resume: its entries from now on are its own again. */
  async thaw(instance: string): Promise<void> {
    await this.client.srem('stopped', instance);
  }

  /** The section `id`'s lock was reported lost to it. */
  async lost(id: string): Promise<void> {
    await this.client.sadd('lost', id);
  }

  /**
   * Wraps taking `key`'s lock away from outside (`*`: every key's). `revoke` does it and
   * returns the highest fencing token it took away; conflicts on the key are tolerated
   * only while it runs, and with holders up to that token afterwards.
   */
  async revoking(key: string, revoke: () => Promise<number>): Promise<void> {
    await this.client.set(`revoking:${key}`, '1');
    try {
      const upTo = await revoke();
      const was = Number((await this.client.get(`revoked:${key}`)) ?? '0');
      if (upTo > was) await this.client.set(`revoked:${key}`, String(upTo));
    } finally {
      await this.client.del(`revoking:${key}`);
    }
  }

  async violations(): Promise<string[]> {
    return this.client.lrange('violations', 0, -1);
  }

  async entries(): Promise<number> {
    return Number((await this.client.get('entries')) ?? '0');
  }

  async reset(): Promise<void> {
    await this.client.flushall();
  }

  close(): void {
    this.client.disconnect();
  }
}
