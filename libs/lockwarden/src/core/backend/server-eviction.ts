/** A server whose memory policy may evict lock keys: `maxmemory` above 0, a policy other than `noeviction`. */
export interface EvictingServer {
  /** "Redis at 10.0.0.5:6379", for messages. */
  readonly server: string;
  /** Its `maxmemory_policy`, as `INFO memory` gives it (`volatile-lru`, `allkeys-lru`, …). */
  readonly policy: string;
  /** Its `maxmemory`, in bytes (above 0). */
  readonly maxmemory: number;
}

/** What `health()` says about eviction (see LockHealthReport). */
export interface EvictionReport {
  keysMayBeEvicted: boolean;
  evictionPolicy?: string;
  evictedKeys?: number;
}

/**
 * What a backend knows of its servers' eviction: which may drop lock keys under their holders,
 * and when some did. Redis keeps a lock only as long as its key: a server that evicts keys can
 * end a lock that its holder still uses, and nothing but a look at the key tells.
 */
export interface ServerEviction {
  /**
   * The first server found evicting; undefined when none is; `'pending'` until every server
   * was first looked at (or could not be).
   */
  evicting(): EvictingServer | undefined | 'pending';
  /** Resolves once every server was first looked at, or after `ms`, whichever comes first. */
  checked(ms: number): Promise<void>;
  /**
   * The health report's fields, with the evictions counted since the engine started; the
   * policies are read again first. Never throws.
   */
  report(timeoutMs: number): Promise<EvictionReport>;
  /**
   * While `active()` says locks are held: when some server that evicts did evict (looked for a
   * few times a second), or a connection came back after it was lost, calls `check` with why
   * every held lock should be looked at now (a clause: "its key was evicted (…)").
   */
  watch(active: () => boolean, check: (reason: string) => void): void;
  close(): void;
}

/** "24 MB", for messages about a server's `maxmemory`. */
export function megabytes(bytes: number): string {
  const mb = bytes / (1024 * 1024);
  return `${mb >= 10 ? Math.round(mb) : Math.round(mb * 10) / 10} MB`;
}
