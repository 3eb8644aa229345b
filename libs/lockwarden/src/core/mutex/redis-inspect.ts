import { mutexKeys, rwKeys } from '../backend/lock-keys';
import type { RedisConnection } from '../redis/connection';
import { SCRIPTS } from '../redis/lua-script';
import { lockHolder } from '../backend/lock-info';
import type { LockHolderInfo, LockInfo } from '../backend/lock-info';

/** Reads one lock's state in one script call. */
export async function inspectLock(client: RedisConnection, prefix: string, key: string): Promise<LockInfo> {
  const m = mutexKeys(prefix, key);
  const rw = rwKeys(prefix, key);
  const reply = (await SCRIPTS.inspect.run(
    client,
    [m.lock, m.fence, m.queue, rw.lock, rw.writers, rw.fence, rw.queue],
    [],
  )) as (string | number)[];
  const kind = String(reply[0]);
  const leaseLeftMs = Math.max(0, Number(reply[1]));
  const holders: LockHolderInfo[] = [];
  for (let i = 4; i + 1 < reply.length; i += 2) {
    holders.push(lockHolder(String(reply[i]), Math.max(0, Number(reply[i + 1]))));
  }
  return {
    key,
    held: kind !== '',
    kind: kind === '' ? null : (kind as LockInfo['kind']),
    holders,
    leaseLeftMs,
    // '' (a plain grant whose token nobody read) or 0 (no counter): no token to show.
    fencingToken: Number(reply[2]) || null,
    waiters: Number(reply[3]),
  };
}

/** Deletes one key's mutex and read/write lock, whoever holds them; true when one was held. */
export async function forceUnlockKey(client: RedisConnection, prefix: string, key: string): Promise<boolean> {
  const m = mutexKeys(prefix, key);
  const rw = rwKeys(prefix, key);
  const reply = await SCRIPTS.forceUnlock.run(
    client,
    [m.lock, m.queue, m.waiters, m.channel, rw.lock, rw.writers, rw.channel, rw.queue, rw.waiters],
    [client.cluster ? 'spublish' : 'publish'],
  );
  return Number(reply) > 0;
}
