import type { ConnectionFailure } from '../../errors/redis-reason';

/** One holder of a lock, as operators may see it: never its owner token. */
export interface LockHolderInfo {
  /** The instance id the holder's process gave (`instanceId`, by default `hostname:pid`). */
  instanceId: string;
  /** How long this holder's lease has left, in ms. */
  leaseLeftMs: number;
}

/** A holder as `inspect()` reports it, its lease left under both names. */
export function lockHolder(instanceId: string, leaseLeftMs: number): LockHolderInfo {
  return { instanceId, leaseLeftMs };
}

/**
 * What `inspect()` reports about one key.
 *
 * @example
 * ```ts
 * const info = await locks.inspect('invoice:42');
 * if (info.held) console.log(`${info.kind} held by ${info.holders.map((h) => h.instanceId).join(', ')}`);
 * ```
 */
export interface LockInfo {
  key: string;
  held: boolean;
  /** What holds it: 'mutex', or the side of a read/write lock; null when free. */
  kind: 'mutex' | 'read' | 'write' | null;
  holders: LockHolderInfo[];
  /** The longest remaining lease among the holders, in ms; 0 when free. */
  leaseLeftMs: number;
  /**
   * The holder's fencing token (a reader's: the last write's); null while the holder has not
   * read it (an uncontended mutex mints its token on first read). When free, the last one
   * handed out, or null when none is remembered.
   */
  fencingToken: number | null;
  /**
   * Waiters with a place on the server: every mutex waiter once its first attempt found the
   * lock busy (with a quorum and with replicaAck, fair waiters only, since there is no
   * queue), and waiting writers. A waiter that has just started is not counted yet.
   */
  waiters: number;
}

/** One live holder of a semaphore's permits, as operators may see it: never its owner token. */
export interface PermitHolderInfo {
  /** The instance id the holder's process gave (`instanceId`, by default `hostname:pid`). */
  instanceId: string;
  /** How many permits it holds. */
  permits: number;
  /** How long its lease has left, in ms. */
  leaseLeftMs: number;
}

/**
 * What `Semaphore.inspect()` reports: the stored limit and who holds permits now.
 *
 * @example
 * ```ts
 * const info = await locks.semaphore('payments-api', { limit: 5 }).inspect();
 * console.log(`${info.used}/${info.limit} in use, by ${info.holders.map((h) => h.instanceId).join(', ')}`);
 * ```
 */
export interface SemaphoreInfo {
  key: string;
  /**
   * The stored limit. From the CLI, null before the semaphore's first use stored one;
   * `Semaphore.inspect()` gives its own number then.
   */
  limit: number | null;
  /** Permits held by live holders (at most `limit`, unless the limit was lowered under them). */
  used: number;
  /** Permits a new grant could take now (0 while the limit is lowered under the holders). */
  available: number;
  holders: PermitHolderInfo[];
  /** The last fencing token handed out for this semaphore (0: none yet). */
  fencingToken: number;
}

/** The reply of sem-inspect.lua (and of the memory backend's twin) as a SemaphoreInfo. */
export function semaphoreInfo(key: string, reply: readonly (string | number)[]): SemaphoreInfo {
  const limit = Number(reply[0]);
  const holders: PermitHolderInfo[] = [];
  for (let i = 2; i + 2 < reply.length; i += 3) {
    const leaseLeftMs = Math.max(0, Number(reply[i + 2]));
    holders.push({ instanceId: String(reply[i]), permits: Number(reply[i + 1]), leaseLeftMs });
  }
  const used = holders.reduce((sum, h) => sum + h.permits, 0);
  return {
    key,
    limit: limit < 0 ? null : limit,
    used,
    available: limit < 0 ? 0 : Math.max(0, limit - used),
    holders,
    fencingToken: Number(reply[1]),
  };
}

/**
 * What a health check needs to know about one engine.
 *
 * @example
 * ```ts
 * const report = await engine.health();
 * if (!report.reachable) alert(`locks unavailable: ${report.error}`);
 * ```
 */
export interface LockHealthReport {
  /** Whether Redis answered PING (with a quorum: a majority of the nodes). */
  reachable: boolean;
  /** The slowest PING round trip among the servers that answered, in ms. */
  pingMs: number;
  /** Servers asked, and how many answered. */
  servers: number;
  serversUp: number;
  /** Whether every server already has every lock script cached (they load on first use otherwise). */
  scriptsLoaded: boolean;
  /** How late the watchdog's last renewal round ran, in ms. */
  watchdogLagMs: number;
  /** Locks this process holds now. */
  heldLocks: number;
  /** Why a server did not answer, when one did not. */
  error?: string;
  /**
   * How that server failed: `'refused'` when its connection was turned away or is down (Redis
   * stopped, wrong port, host gone), `'no-answer'` when nothing came back in time (a stalled or
   * overloaded server, a partition). Absent when the failure was something else (an error reply).
   */
  failure?: ConnectionFailure;
  /**
   * Whether a server may evict lock keys (a `maxmemory` with a policy other than
   * `noeviction`): a lock could then end under its holder. Reachable servers that may evict
   * are still "up", with a warning. Always false in memory.
   */
  keysMayBeEvicted: boolean;
  /** The policy of the first server that may evict (`volatile-lru`, `allkeys-lru`, …). */
  evictionPolicy?: string;
  /** Keys the servers that may evict evicted since this engine started (any key, not only locks). */
  evictedKeys?: number;
}

/** What the store knows of its servers; the engine adds the watchdog's side and eviction's. */
export type ServerProbe = Omit<
  LockHealthReport,
  'watchdogLagMs' | 'heldLocks' | 'keysMayBeEvicted' | 'evictionPolicy' | 'evictedKeys'
>;
