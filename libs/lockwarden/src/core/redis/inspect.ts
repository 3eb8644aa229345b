import { mutexKeys, rwKeys } from './lock-keys';
import type { RedisClient } from './redis-client';
import { SCRIPTS } from '../scripts/lua-script';

/** One holder of a lock, as operators may see it: never its owner token. */
export interface LockHolderInfo {
  /** The instance id the holder's process gave (`instanceId`, by default `hostname:pid`). */
  instanceId: string;
  /** How long this holder's lease has left, in ms. */
  ttlMs: number;
}

/**
 * What `inspect()` reports about one lock name.
 *
 * @example
 * ```ts
 * const info = await locks.inspect('invoice:42');
 * if (info.held) console.log(`${info.mode} held by ${info.holders.map((h) => h.instanceId).join(', ')}`);
 * ```
 */
export interface LockInfo {
  key: string;
  held: boolean;
  /** 'mutex', or the side of a read/write lock that holds it; null when free. */
  mode: 'mutex' | 'read' | 'write' | null;
  holders: LockHolderInfo[];
  /** The longest remaining lease among the holders, in ms; 0 when free. */
  ttlMs: number;
  /**
   * The holder's fencing token (a reader's: the last write's); when free, the last one handed
   * out. A mutex taken uncontended on one server keeps its token only in the counter: then it
   * is the last token handed out on the name, which is the holder's unless an attempt that
   * found the lock busy has counted since.
   */
  fencingToken: number;
  /**
   * Waiters with a place on the server: fair waiters, waiters that have waited more than a
   * few ms (starvation mode), and waiting writers. A waiter that has just started is not
   * counted yet.
   */
  waiters: number;
}

/** Reads one lock's state in one script call. */
export async function inspectLock(client: RedisClient, prefix: string, key: string): Promise<LockInfo> {
  const m = mutexKeys(prefix, key);
  const rw = rwKeys(prefix, key);
  const reply = (await SCRIPTS.inspect.run(client, [m.lock, m.fence, m.queue, rw.lock, rw.writers, rw.fence], [])) as (
    string | number
  )[];
  const mode = String(reply[0]);
  const holders: LockHolderInfo[] = [];
  for (let i = 4; i + 1 < reply.length; i += 2) {
    holders.push({ instanceId: String(reply[i]), ttlMs: Math.max(0, Number(reply[i + 1])) });
  }
  return {
    key,
    held: mode !== '',
    mode: mode === '' ? null : (mode as LockInfo['mode']),
    holders,
    ttlMs: Math.max(0, Number(reply[1])),
    fencingToken: Number(reply[2]),
    waiters: Number(reply[3]),
  };
}

/** Deletes one lock name's mutex and read/write lock, whoever holds them; true when one was held. */
export async function forceUnlockKey(client: RedisClient, prefix: string, key: string): Promise<boolean> {
  const m = mutexKeys(prefix, key);
  const rw = rwKeys(prefix, key);
  const reply = await SCRIPTS.forceUnlock.run(
    client,
    [m.lock, m.queue, m.waiters, m.channel, rw.lock, rw.writers, rw.channel],
    [client.isCluster ? 'spublish' : 'publish'],
  );
  return Number(reply) > 0;
}
