import { LockConfigError } from '../../errors';
import { describe, quoteKey } from '../../errors/key-text';

// What a lock key may be, and the Redis keys each kind of lock names from it.

export const MAX_KEY_LENGTH = 1024;
/**
 * Half of a UTF-16 surrogate pair without the other half. Encoded as UTF-8 for Redis it
 * becomes U+FFFD, so two different JavaScript strings would name one Redis key.
 */
const LONE_SURROGATE = /\p{Surrogate}/u;

/** The key, or a LockConfigError saying what is wrong with it (`where` names it: "lock key", "semaphore key"). */
export function checkKey(key: unknown, where = 'lock key'): string {
  if (typeof key !== 'string') {
    throw new LockConfigError(`The ${where} must be a string, got ${describe(key)}.`);
  }
  if (key.length === 0) throw new LockConfigError(`The ${where} must not be empty.`);
  if (key.length > MAX_KEY_LENGTH) {
    throw new LockConfigError(
      `The ${where} is ${key.length} characters long; the limit is ${MAX_KEY_LENGTH}. Hash long identifiers first.`,
      key.slice(0, 64),
    );
  }
  if (!isWellFormed(key)) {
    throw new LockConfigError(
      `The ${where} ${quoteKey(key)} contains a lone UTF-16 surrogate. Redis would store it as U+FFFD, ` +
        'the same key as other strings that differ only there. Use well-formed text, or hash binary identifiers first.',
      key,
    );
  }
  return key;
}

/** True when `text` has no lone surrogate: what String.prototype.isWellFormed (ES2024) answers. */
export function isWellFormed(text: string): boolean {
  // Native where the runtime has it (Node 20+): a Unicode-property regex costs more per acquire.
  const native = (text as { isWellFormed?: () => boolean }).isWellFormed;
  return native ? native.call(text) : !LONE_SURROGATE.test(text);
}

/**
 * The Redis keys of one mutex. All share the hash tag `{key}`, so every script
 * touches a single slot and runs unchanged on Redis Cluster; the channel shares
 * it too, ready for sharded pub/sub.
 */
export interface MutexKeys {
  /** String "owner|fence|instance", "|w" appended once someone waits. Its TTL is the lease. */
  readonly lock: string;
  /** Counter of fencing tokens: they only rise, across releases and its expiry a minute after its last grant. */
  readonly fence: string;
  /** Zset of fair waiters by arrival. */
  readonly queue: string;
  /** Hash of fair waiter records (deadline, lease, waiter id, instance). */
  readonly waiters: string;
  /** Pub/sub channel a release publishes on. */
  readonly channel: string;
  /** KEYS of acquire.lua for a queued (fair) attempt. */
  readonly acquireKeys: readonly string[];
  /** KEYS of acquire.lua for a plain attempt: the queue is not its business. */
  readonly plainAcquireKeys: readonly string[];
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
    plainAcquireKeys: [base, fence],
    releaseKeys: [base, fence, queue, waiters, channel],
  };
}

/**
 * The Redis keys of one read/write lock: a key space of its own (`:rw`), so a
 * mutex and a read/write lock with the same name are independent locks and
 * can never corrupt each other. Same `{key}` hash tag, so same slot.
 */
export interface RwKeys {
  /** Hash of the writer and of every reader, each with its own server-time deadline. */
  readonly lock: string;
  /** Zset of waiting writers (writer preference). */
  readonly writers: string;
  /** Counter of write fencing tokens. */
  readonly fence: string;
  /** Zset of waiters with a place, readers and writers, by arrival; a release hands the lock to the oldest. */
  readonly queue: string;
  /** Hash of those waiters' records (deadline, read or write, hand-off lease, waiter id, inbox, attempt, instance). */
  readonly waiters: string;
  readonly channel: string;
  /** KEYS of rw-acquire.lua for a first attempt: the queue is not its business. */
  readonly acquireKeys: readonly string[];
  /** KEYS of rw-acquire.lua for a queued attempt. */
  readonly queuedAcquireKeys: readonly string[];
  /** KEYS of rw-release.lua, with the queue it hands the lock off to. */
  readonly releaseKeys: readonly string[];
}

export function rwKeys(prefix: string, key: string): RwKeys {
  const base = `${prefix}{${key}}:rw`;
  const writers = `${base}:writers`;
  const fence = `${base}:fence`;
  const queue = `${base}:queue`;
  const waiters = `${base}:waiters`;
  const channel = `${base}:released`;
  return {
    lock: base,
    writers,
    fence,
    queue,
    waiters,
    channel,
    acquireKeys: [base, writers, fence],
    queuedAcquireKeys: [base, writers, fence, queue, waiters],
    releaseKeys: [base, writers, channel, fence, queue, waiters],
  };
}

/**
 * The Redis keys of one counting semaphore: a key space of its own (`:sem`), so a mutex,
 * a read/write lock and a semaphore with the same name never touch each other's keys.
 * Same `{key}` hash tag, so same slot, and each script runs unchanged on Cluster.
 */
export interface SemKeys {
  /** Zset of holders: owner token -> lease deadline (server ms). What renewals name. */
  readonly lock: string;
  /** Hash of holders: owner token -> "permits|fence|instance". */
  readonly permits: string;
  /** The number of permits, kept across releases and restarts of the holders. */
  readonly limit: string;
  /** Counter of fencing tokens, one per grant. */
  readonly fence: string;
  /** Zset of waiters with a place, by arrival; a release hands permits to the oldest that fit. */
  readonly queue: string;
  /** Hash of those waiters' records (deadline, permits, hand-off lease, waiter id, inbox, attempt, instance). */
  readonly waiters: string;
  readonly channel: string;
  /** KEYS of sem-acquire.lua for a first attempt: the queue is not its business. */
  readonly acquireKeys: readonly string[];
  /** KEYS of sem-acquire.lua for a queued attempt. */
  readonly queuedAcquireKeys: readonly string[];
  /** KEYS of sem-release.lua, with the queue it hands permits off to. */
  readonly releaseKeys: readonly string[];
  readonly limitKeys: readonly string[];
}

export function semKeys(prefix: string, key: string): SemKeys {
  const base = `${prefix}{${key}}:sem`;
  const holders = `${base}:holders`;
  const permits = `${base}:permits`;
  const limit = `${base}:limit`;
  const fence = `${base}:fence`;
  const queue = `${base}:queue`;
  const waiters = `${base}:waiters`;
  const channel = `${base}:released`;
  return {
    lock: holders,
    permits,
    limit,
    fence,
    queue,
    waiters,
    channel,
    acquireKeys: [holders, permits, limit, fence],
    queuedAcquireKeys: [holders, permits, limit, fence, queue, waiters],
    releaseKeys: [holders, permits, channel, limit, fence, queue, waiters],
    limitKeys: [limit, channel],
  };
}

/** The permits hash that goes with a semaphore's holders zset (renewals pass both). */
export function semPermitsKey(holdersKey: string): string {
  return `${holdersKey.slice(0, -':holders'.length)}:permits`;
}

/** The Redis keys of one leadership: all share the lock's hash tag, so one slot on a Cluster. */
export interface TermKeys {
  /** The mutex the terms are leases of. */
  readonly lock: string;
  /** Hash: the latest term (instanceId, fencingToken, since, state). */
  readonly term: string;
  /** Stream: every term's start and resignation, by fencing token. */
  readonly log: string;
  /** Channel: announcements of both. */
  readonly channel: string;
}

export function termKeys(prefix: string, lockKey: string): TermKeys {
  const lock = mutexKeys(prefix, lockKey).lock;
  return { lock, term: `${lock}:term`, log: `${lock}:terms`, channel: `${lock}:elections` };
}

/** `text` with SCAN's glob characters escaped, for a MATCH pattern that must take it literally. */
export function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
