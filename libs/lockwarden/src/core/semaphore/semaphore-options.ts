import { LockConfigError } from '../../errors';
import {
  checkInteger,
  checkKey,
  checkKnownNames,
  checkOptionsObject,
  defaultLockName,
  describe,
  MAX_MS,
  MIN_LEASE_MS,
} from '../engine/options';
import type { LockDefaults, ResolvedAcquire } from '../engine/options';

/** The most permits one semaphore may have: far beyond any real limit, and exact in Lua. */
export const MAX_PERMITS = 2 ** 31 - 1;

/**
 * Options of `LockService.semaphore(key, options)`.
 *
 * @example
 * ```ts
 * const exports = locks.semaphore('exports', { permits: 3 }); // at most 3 exports at once, cluster-wide
 * ```
 */
export interface SemaphoreOptions {
  /**
   * How many permits the semaphore has. Stored in Redis on the semaphore's first use; when a
   * limit is stored already (another instance, an earlier `setPermits`), the stored one rules,
   * also after a redeploy with a new number: apply a new number with `setPermits`.
   */
  permits: number;
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

/** Checks `semaphore(key, options)`: the key and the limit. */
export function resolveSemaphore(rawKey: unknown, rawOptions: unknown): { key: string; permits: number } {
  const key = checkKey(rawKey, 'semaphore key');
  const options = checkOptionsObject('Semaphore', rawOptions, key);
  checkKnownNames('semaphore', options, new Set(['permits']), key);
  if (options.permits === undefined) {
    throw new LockConfigError('A semaphore needs its number of permits: semaphore(key, { permits: n }).', key);
  }
  return { key, permits: checkPermits('permits', options.permits, MAX_PERMITS, key) };
}

/** Checks one acquire's options, filling in the defaults. */
export function resolvePermitAcquire(
  key: string,
  rawOptions: unknown,
  defaults: LockDefaults,
): ResolvedAcquire & { permits: number } {
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
