import { LockConfigError } from '../../errors';
import {
  checkBoolean,
  checkInteger,
  integerOr,
  checkKnownNames,
  checkName,
  checkOptionsObject,
  checkSignal,
  MAX_MS,
  MIN_LEASE_MS,
} from './validate';
import { checkKey } from '../backend/lock-keys';

// The checks live in validate.ts; the option resolvers of leaderships and scheduled jobs read these from here.
export { checkKnownNames, checkOptionsObject, describe, MAX_MS } from './validate';

/**
 * Per-call options of `acquire`, `tryAcquire` and `withLock`.
 *
 * @example
 * ```ts
 * await locks.withLock('payout:7', pay, { waitMs: 2_000, fair: true });
 * await locks.acquire('cache:warm', { leaseMs: 5_000, renew: false, waitMs: 0 }); // fixed lease
 * ```
 */
export interface AcquireOptions {
  /**
   * The lease in ms: how long the lock outlives a holder that crashed. The watchdog renews it
   * while you hold the lock, unless `renew` is false. Defaults to the module's `leaseMs`.
   */
  leaseMs?: number;
  /**
   * Whether the watchdog renews the lease while you hold the lock. Default true. With `false`
   * the lease is fixed: the lock expires `leaseMs` after it was granted, and the signal aborts
   * (a safety margin) before then, whether or not the work is done.
   */
  renew?: boolean;
  /** How long to wait for a busy lock, in ms. 0 makes a single attempt. Defaults to the module's `waitMs`. */
  waitMs?: number;
  /** Cancels the wait. Rejects with `LockAbortedError`; nothing is left locked. */
  signal?: AbortSignal;
  /** Grant the lock to waiters in arrival order (FIFO). Default false. */
  fair?: boolean;
  /**
   * Mint the fencing token with the grant, for a caller that always reads it: the acquire is
   * one script instead of a plain `SET`, and `fencingToken()` then resolves at once, saving
   * the round trip of a mint on first read. Default false: a token is minted only when read.
   */
  fenced?: boolean;
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

/** Options of one acquisition with every default applied. */
export interface ResolvedAcquire {
  key: string;
  leaseMs: number;
  renew: boolean;
  waitMs: number;
  signal: AbortSignal | undefined;
  fair: boolean;
  /** Mint the fencing token with the grant (AcquireOptions.fenced). */
  fenced: boolean;
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
  'leaseMs',
  'renew',
  'waitMs',
  'signal',
  'fair',
  'fenced',
  'maxHoldMs',
  'lockAtLeastMs',
  'name',
]);

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

  const { waitMs, fair } = options;
  const maxHoldMs = integerOr('maxHoldMs', options.maxHoldMs, defaults.maxHoldMs, MIN_LEASE_MS, MAX_MS, key);
  const lockAtLeastMs = integerOr('lockAtLeastMs', options.lockAtLeastMs, undefined, 0, MAX_MS, key);
  if (lockAtLeastMs !== undefined && maxHoldMs !== undefined && lockAtLeastMs > maxHoldMs) {
    throw new LockConfigError(
      `lockAtLeastMs (${lockAtLeastMs}) must not exceed maxHoldMs (${maxHoldMs}): a lock cannot be kept longer than it may be held.`,
      key,
    );
  }
  const { lease, renew } = leaseOf(options, defaults, key);
  const leaseMs = maxHoldMs === undefined ? lease : Math.min(lease, maxHoldMs);
  const wait = waitMs === undefined ? defaults.waitMs : checkInteger('waitMs', waitMs, 0, MAX_MS, key);
  const signal = checkSignal(options.signal, key);
  checkBoolean('fair', fair, key);
  checkBoolean('fenced', options.fenced, key);
  const name = checkName(options.name, key);
  return {
    key,
    leaseMs,
    renew,
    waitMs: wait,
    signal,
    fair: fair === true,
    fenced: options.fenced === true,
    maxHoldMs,
    lockAtLeastMs,
    name: name ?? (key === undefined ? undefined : defaultLockName(key)),
  };
}

/** The lease of one acquire and whether it is renewed, from `leaseMs` and `renew`. */
function leaseOf(
  options: Record<string, unknown>,
  defaults: LockDefaults,
  key: string | undefined,
): { lease: number; renew: boolean } {
  checkBoolean('renew', options.renew, key);
  return {
    lease: integerOr('leaseMs', options.leaseMs, defaults.leaseMs, MIN_LEASE_MS, MAX_MS, key),
    renew: options.renew !== false,
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

/** A key's metric name when none was given: its first `:` segment, then `:*` when more follows. */
export function defaultLockName(key: string): string {
  const colon = key.indexOf(':');
  return colon < 0 ? key : `${key.slice(0, colon)}:*`;
}
