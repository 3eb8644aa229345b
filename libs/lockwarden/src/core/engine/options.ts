import { LockConfigError } from '../../errors';
import { quoteKey } from '../../errors/key-text';

/** Largest timer delay Node accepts, and so the largest lease or wait we allow. */
export const MAX_MS = 2 ** 31 - 1;
/** Shortest lease that survives a round trip and a renewal. */
export const MIN_LEASE_MS = 10;
export const MAX_KEY_LENGTH = 1024;
/**
 * Half of a UTF-16 surrogate pair without the other half. Encoded as UTF-8 for Redis it
 * becomes U+FFFD, so two different JavaScript strings would name one Redis key.
 */
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * Per-call options of `acquire`, `tryAcquire` and `withLock`.
 *
 * @example
 * ```ts
 * await locks.withLock('payout:7', pay, { waitMs: 2_000, fair: true });
 * await locks.acquire('cache:warm', { ttlMs: 5_000, waitMs: 0 }); // fixed lease, no renewal
 * ```
 */
export interface AcquireOptions {
  /** Fixed lease in ms. The lock is never renewed and simply expires after it. Omit to let the watchdog renew a `leaseMs` lease while you hold it. */
  ttlMs?: number;
  /** How long to wait for a busy lock, in ms. 0 makes a single attempt. Defaults to the module's `waitMs`. */
  waitMs?: number;
  /** Cancels the wait. Rejects with `LockAbortedError`; nothing is left locked. */
  signal?: AbortSignal;
  /** Grant the lock to waiters in arrival order (FIFO). Default false. */
  fair?: boolean;
  /**
   * The longest one acquisition may be kept alive (ShedLock's lockAtMostFor).
   * Renewal never extends the lease past it; when it is reached the signal
   * aborts, and a crashed holder frees the lock by then at the latest.
   */
  maxHoldMs?: number;
  /**
   * Keep the lock until this long after it was acquired, even when the work
   * finished sooner (ShedLock's lockAtLeastFor). Other instances whose clocks
   * run a little behind then skip the same scheduled run instead of repeating it.
   */
  lockAtLeastMs?: number;
  /**
   * The lock's name in metrics: low-cardinality, so never the expanded key. Defaults to the
   * decorator's key template, or for a direct call to the key's first `:` segment followed
   * by `:*` (`'order:42'` is named `'order:*'`).
   */
  name?: string;
}

/** The engine's defaults, already validated. */
export interface LockDefaults {
  keyPrefix: string;
  leaseMs: number;
  waitMs: number;
  safetyMarginMs: number | undefined;
  maxHoldMs?: number | undefined;
}

/**
 * Options of `acquireRead`, `acquireWrite`, `withReadLock` and `withWriteLock`.
 *
 * @example
 * ```ts
 * await locks.withReadLock('catalog', render, { waitMs: 1_000 });
 * await locks.withReadLock('stats', read, { writerPreference: false }); // may overtake waiting writers
 * ```
 */
export interface RwAcquireOptions extends Omit<AcquireOptions, 'fair'> {
  /** Reads only: wait behind writers that are already waiting, so readers cannot starve them. Default true. */
  writerPreference?: boolean;
}

/**
 * Per-call options of `Semaphore.acquire`, `tryAcquire` and `withPermit`.
 *
 * @example
 * ```ts
 * await exports.withPermit(run, { permits: 2, waitMs: 5_000, signal: request.signal });
 * ```
 */
export interface PermitOptions {
  /**
   * How many permits this holder takes. Default 1. An ask above the stored limit waits until
   * `setPermits` raises the limit, and times out otherwise.
   */
  permits?: number;
  /** How long to wait for permits, in ms. 0 makes a single attempt. Defaults to the module's `waitMs`. */
  waitMs?: number;
  /** Cancels the wait with `LockAbortedError`; nothing is left held. */
  signal?: AbortSignal;
  /** The lease the watchdog renews, in ms (the time a crashed holder keeps its permits). Defaults to the module's `leaseMs`. */
  leaseMs?: number;
  /** The longest one holder may keep its permits alive; the signal aborts then. */
  maxHoldMs?: number;
  /**
   * Not supported: permits go to whichever waiter fits first, with no FIFO queue, so a
   * waiter for many permits can be overtaken by waiters for few. `true` is refused with
   * `LockConfigError`.
   */
  fair?: boolean;
  /** The semaphore's low-cardinality name in metrics and events (default: as for locks). */
  name?: string;
}

/** Options of one acquisition with every default applied. */
export interface ResolvedAcquire {
  key: string;
  leaseMs: number;
  renew: boolean;
  waitMs: number;
  signal: AbortSignal | undefined;
  fair: boolean;
  maxHoldMs: number | undefined;
  lockAtLeastMs: number | undefined;
  /** The low-cardinality name metrics label the lock with. */
  name: string;
}

/** Acquire options checked without a key: the key, and so the name's default, are not known yet. */
export type CheckedAcquire = Omit<ResolvedAcquire, 'key' | 'name'> & {
  readonly key: string | undefined;
  readonly name: string | undefined;
};

const ACQUIRE_OPTION_NAMES: ReadonlySet<string> = new Set([
  'ttlMs',
  'waitMs',
  'signal',
  'fair',
  'maxHoldMs',
  'lockAtLeastMs',
  'name',
]);

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

export function checkInteger(field: string, value: unknown, min: number, max: number, key?: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new LockConfigError(
      `${field} must be an integer from ${min} to ${max} (milliseconds), got ${describe(value)}.`,
      key,
    );
  }
  return value;
}

/** Rejects option names we do not know, so a typo such as `waitMS` is never silently ignored. */
export function checkKnownNames(what: string, options: object, allowed: ReadonlySet<string>, key?: string): void {
  for (const name of Object.keys(options)) {
    if (!allowed.has(name)) {
      throw new LockConfigError(
        `Unknown ${what} option ${quoteKey(name)}. Allowed: ${[...allowed].sort().join(', ')}.`,
        key,
      );
    }
  }
}

export function checkOptionsObject(what: string, options: unknown, key?: string): Record<string, unknown> {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new LockConfigError(`${what} options must be an object, got ${describe(options)}.`, key);
  }
  return options as Record<string, unknown>;
}

/**
 * Checks acquire options on their own, with or without a key: the one options check that
 * the engine runs on every acquire and the decorators run where they are applied. `name`
 * stays undefined when none was given (its default comes from the key).
 */
export function checkAcquireOptions(
  rawOptions: unknown,
  defaults: LockDefaults,
  extraNames?: ReadonlySet<string>,
): CheckedAcquire;
/** With a key, its name's default comes from the key: the options of that one acquire. */
export function checkAcquireOptions(
  rawOptions: unknown,
  defaults: LockDefaults,
  extraNames: ReadonlySet<string>,
  key: string,
): ResolvedAcquire;
export function checkAcquireOptions(
  rawOptions: unknown,
  defaults: LockDefaults,
  extraNames: ReadonlySet<string> = EMPTY,
  key?: string,
): CheckedAcquire {
  const options = checkOptionsObject('Acquire', rawOptions, key);
  if (extraNames.size === 0) checkKnownNames('acquire', options, ACQUIRE_OPTION_NAMES, key);
  else checkKnownNames('acquire', options, new Set([...ACQUIRE_OPTION_NAMES, ...extraNames]), key);

  const { ttlMs, waitMs, signal, fair } = options;
  const maxHoldMs =
    options.maxHoldMs === undefined
      ? defaults.maxHoldMs
      : checkInteger('maxHoldMs', options.maxHoldMs, MIN_LEASE_MS, MAX_MS, key);
  const lockAtLeastMs =
    options.lockAtLeastMs === undefined
      ? undefined
      : checkInteger('lockAtLeastMs', options.lockAtLeastMs, 0, MAX_MS, key);
  if (lockAtLeastMs !== undefined && maxHoldMs !== undefined && lockAtLeastMs > maxHoldMs) {
    throw new LockConfigError(
      `lockAtLeastMs (${lockAtLeastMs}) must not exceed maxHoldMs (${maxHoldMs}): a lock cannot be kept longer than it may be held.`,
      key,
    );
  }
  const renew = ttlMs === undefined;
  const lease = renew ? defaults.leaseMs : checkInteger('ttlMs', ttlMs, MIN_LEASE_MS, MAX_MS, key);
  const leaseMs = maxHoldMs === undefined ? lease : Math.min(lease, maxHoldMs);
  const wait = waitMs === undefined ? defaults.waitMs : checkInteger('waitMs', waitMs, 0, MAX_MS, key);
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new LockConfigError(`signal must be an AbortSignal, got ${describe(signal)}.`, key);
  }
  if (fair !== undefined && typeof fair !== 'boolean') {
    throw new LockConfigError(`fair must be a boolean, got ${describe(fair)}.`, key);
  }
  const name = options.name;
  if (name !== undefined && (typeof name !== 'string' || name.length === 0 || name.length > 200)) {
    throw new LockConfigError(`name must be a non-empty string of at most 200 characters, got ${describe(name)}.`, key);
  }
  return {
    key,
    leaseMs,
    renew,
    waitMs: wait,
    signal,
    fair: fair === true,
    maxHoldMs,
    lockAtLeastMs,
    name: name ?? (key === undefined ? undefined : defaultLockName(key)),
  };
}

/** Checks a key and its acquire options together, filling in the defaults. */
export function resolveAcquire(
  rawKey: unknown,
  rawOptions: unknown,
  defaults: LockDefaults,
  extraNames: ReadonlySet<string> = EMPTY,
): ResolvedAcquire {
  // One object per acquire, built once: this runs on every uncontended acquisition.
  return checkAcquireOptions(rawOptions, defaults, extraNames, checkKey(rawKey));
}

const EMPTY: ReadonlySet<string> = new Set();

/** The most permits one semaphore may have: far beyond any real limit, and exact in Lua. */
export const MAX_PERMITS = 2 ** 31 - 1;

/** Options of one permit acquisition with every default applied: how many permits it takes, too. */
export interface ResolvedPermitAcquire extends ResolvedAcquire {
  permits: number;
}

const PERMIT_OPTION_NAMES: ReadonlySet<string> = new Set([
  'permits',
  'waitMs',
  'signal',
  'leaseMs',
  'maxHoldMs',
  'fair',
  'name',
]);

export function checkPermits(field: string, value: unknown, max: number, key?: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new LockConfigError(`${field} must be an integer from 1 to ${max}, got ${describe(value)}.`, key);
  }
  return value;
}

/** Checks one permit acquire's options, filling in the defaults. */
export function resolvePermitAcquire(key: string, rawOptions: unknown, defaults: LockDefaults): ResolvedPermitAcquire {
  const options = checkOptionsObject('Permit', rawOptions, key);
  checkKnownNames('permit', options, PERMIT_OPTION_NAMES, key);
  // Not bounded by the limit this object was made with: the stored one rules and may be higher.
  // An ask above the stored limit waits for setPermits to raise it.
  const permits = options.permits === undefined ? 1 : checkPermits('permits', options.permits, MAX_PERMITS, key);
  if (options.fair !== undefined && typeof options.fair !== 'boolean') {
    throw new LockConfigError(`fair must be a boolean, got ${describe(options.fair)}.`, key);
  }
  if (options.fair === true) {
    throw new LockConfigError(
      'fair is not available for semaphores: permits go to whichever waiter fits first, with no FIFO queue.',
      key,
    );
  }
  const waitMs =
    options.waitMs === undefined ? defaults.waitMs : checkInteger('waitMs', options.waitMs, 0, MAX_MS, key);
  const lease =
    options.leaseMs === undefined
      ? defaults.leaseMs
      : checkInteger('leaseMs', options.leaseMs, MIN_LEASE_MS, MAX_MS, key);
  const maxHoldMs =
    options.maxHoldMs === undefined
      ? defaults.maxHoldMs
      : checkInteger('maxHoldMs', options.maxHoldMs, MIN_LEASE_MS, MAX_MS, key);
  const signal = options.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new LockConfigError(`signal must be an AbortSignal, got ${describe(signal)}.`, key);
  }
  const name = options.name;
  if (name !== undefined && (typeof name !== 'string' || name.length === 0 || name.length > 200)) {
    throw new LockConfigError(`name must be a non-empty string of at most 200 characters, got ${describe(name)}.`, key);
  }
  return {
    key,
    permits,
    leaseMs: maxHoldMs === undefined ? lease : Math.min(lease, maxHoldMs),
    renew: true,
    waitMs,
    signal,
    fair: false,
    maxHoldMs,
    lockAtLeastMs: undefined,
    name: name ?? defaultLockName(key),
  };
}

/** A key's metric name when none was given: its first `:` segment, then `:*` when more follows. */
export function defaultLockName(key: string): string {
  const colon = key.indexOf(':');
  return colon < 0 ? key : `${key.slice(0, colon)}:*`;
}

/**
 * A value the caller passed, for an error message. Never throws and never runs the value's
 * own code (toString, getters, proxy traps): a message about bad input must not fail on it.
 */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return quoteKey(value, 40);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (typeof value === 'object' && isArray(value)) return 'an array';
  return typeof value;
}

/**
 * A lock key, or whatever was passed as one, for an error message: `"order:42"`, cut to 200
 * characters with its length after it; anything but a string is named by its type. Never
 * throws, so a message about a bad key cannot fail on the key itself.
 */
export function describeKey(key: unknown): string {
  return typeof key === 'string' ? quoteKey(key) : describe(key);
}

function isArray(value: object): boolean {
  try {
    return Array.isArray(value);
  } catch {
    // A revoked proxy throws even here.
    return false;
  }
}
