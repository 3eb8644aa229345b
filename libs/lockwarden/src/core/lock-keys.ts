/**
 * The Redis keys of one mutex. All share the hash tag `{key}`, so every script
 * touches a single slot and runs unchanged on Redis Cluster; the channel shares
 * it too, ready for sharded pub/sub.
 */
export interface MutexKeys {
  /** Hash: owner token, fencing token, instance id. Its TTL is the lease. */
  readonly lock: string;
  /** Counter that survives releases, so fencing tokens only rise. */
  readonly fence: string;
  /** Zset of fair waiters by arrival. */
  readonly queue: string;
  /** Hash of fair waiter records (deadline, lease, waiter id, instance). */
  readonly waiters: string;
  /** Pub/sub channel a release publishes on. */
  readonly channel: string;
  /** KEYS of acquire.lua. */
  readonly acquireKeys: readonly string[];
  /** KEYS of release.lua. */
  readonly releaseKeys: readonly string[];
}

export function mutexKeys(prefix: string, key: string): MutexKeys {
  const base = `${prefix}{${key}}`;
  const fence = `${base}:fence`;
  const queue = `${base}:queue`;
  const waiters = `${base}:waiters`;
  const channel = `${base}:released`;
  return {
    lock: base,
    fence,
    queue,
    waiters,
    channel,
    acquireKeys: [base, fence, queue, waiters],
    releaseKeys: [base, fence, queue, waiters, channel],
  };
}
