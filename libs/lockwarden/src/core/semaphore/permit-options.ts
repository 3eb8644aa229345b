import { LockConfigError } from '../../errors';
import {
  checkBoolean,
  checkKnownNames,
  checkName,
  checkOptionsObject,
  checkPermits,
  checkSignal,
  integerOr,
  MAX_MS,
  MAX_PERMITS,
  MIN_LEASE_MS,
} from '../options/validate';
import { defaultLockName } from '../options/options';
import type { LockDefaults, ResolvedAcquire } from '../options/options';

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
   * `setLimit` raises the limit, and times out otherwise.
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
   * Not an option here: a semaphore's waiters queue in arrival order already (a waiter whose
   * ask does not fit holds later ones back), where the store keeps a queue (not with
   * `replicaAck`). `true` is refused with `LockConfigError`.
   */
  fair?: boolean;
  /** The semaphore's low-cardinality name in metrics and events (default: as for locks). */
  name?: string;
}

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

/** Checks one permit acquire's options, filling in the defaults. */
export function resolvePermitAcquire(key: string, rawOptions: unknown, defaults: LockDefaults): ResolvedPermitAcquire {
  const options = checkOptionsObject('Permit', rawOptions, key);
  checkKnownNames('permit', options, PERMIT_OPTION_NAMES, key);
  // Not bounded by the limit this object was made with: the stored one rules and may be higher.
  // An ask above the stored limit waits for setLimit to raise it.
  const permits = options.permits === undefined ? 1 : checkPermits('permits', options.permits, MAX_PERMITS, key);
  if (checkBoolean('fair', options.fair, key)) {
    throw new LockConfigError(
      'fair is not an option for semaphores: their waiters queue in arrival order already (without replicaAck).',
      key,
    );
  }
  const waitMs = integerOr('waitMs', options.waitMs, defaults.waitMs, 0, MAX_MS, key);
  const lease = integerOr('leaseMs', options.leaseMs, defaults.leaseMs, MIN_LEASE_MS, MAX_MS, key);
  const maxHoldMs = integerOr('maxHoldMs', options.maxHoldMs, defaults.maxHoldMs, MIN_LEASE_MS, MAX_MS, key);
  const signal = checkSignal(options.signal, key);
  const name = checkName(options.name, key);
  return {
    key,
    permits,
    leaseMs: maxHoldMs === undefined ? lease : Math.min(lease, maxHoldMs),
    renew: true,
    waitMs,
    signal,
    fair: false,
    // A permit's grant script mints its token anyway.
    fenced: true,
    maxHoldMs,
    lockAtLeastMs: undefined,
    name: name ?? defaultLockName(key),
  };
}
