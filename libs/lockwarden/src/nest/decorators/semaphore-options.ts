import { LockConfigError } from '../../errors';
import { checkKnownNames, checkOptionsObject, describe, resolvePermitAcquire, resolveSemaphore } from '../../core';
import type { AcquireOptions } from '../../core';
import { checkRetryAfter } from './locked-options';
import type { CheckedLockedOptions, OnBusy } from './locked-options';

/**
 * Options of `@Semaphore`.
 *
 * @example
 * ```ts
 * @Semaphore('exports', { permits: 3 })                      // at most 3 running, cluster-wide
 * @Semaphore('partner-api', { permits: 10, onBusy: 'throw' }) // full: 409 over HTTP
 * ```
 */
export interface SemaphoreDecoratorOptions {
  /** The semaphore's number of permits (stored on first use, as `LockService.semaphore`). Each call takes one. */
  permits: number;
  /** How long a call waits for a permit, in ms. Defaults to the module's `waitMs`. */
  waitMs?: number;
  /** The lease the watchdog renews, in ms. Defaults to the module's `leaseMs`. */
  leaseMs?: number;
  /** The longest one call may keep its permit alive. */
  maxHoldMs?: number;
  /** The name in metrics and events (default: the key template). */
  name?: string;
  /** `'wait'` (default) waits up to `waitMs`; `'throw'` rejects at once with `LockTimeoutError`; `'skip'` resolves `undefined` without running. */
  onBusy?: OnBusy;
  /** On a route: the `Retry-After` of its 409 when full, in ms. */
  retryAfterMs?: number;
}

const NAMES: ReadonlySet<string> = new Set([
  'permits',
  'waitMs',
  'leaseMs',
  'maxHoldMs',
  'name',
  'onBusy',
  'retryAfterMs',
]);
const CHECK_DEFAULTS = { keyPrefix: '', leaseMs: 30_000, waitMs: 0, safetyMarginMs: undefined };

/** Validates `@Semaphore` options where the decorator is applied, so mistakes surface at startup. */
export function checkSemaphoreDecoratorOptions(options: unknown, where: string): CheckedLockedOptions {
  const fail = (err: unknown): never => {
    throw new LockConfigError(`${where}: ${(err as Error).message}`);
  };
  let raw: Record<string, unknown> = {};
  try {
    raw = checkOptionsObject('@Semaphore', options);
    checkKnownNames('@Semaphore', raw, NAMES);
  } catch (err) {
    fail(err);
  }
  const { onBusy = 'wait', retryAfterMs, permits, ...perCall } = raw;
  try {
    resolveSemaphore('template', { permits });
    resolvePermitAcquire('template', perCall, CHECK_DEFAULTS);
  } catch (err) {
    fail(err);
  }
  if (retryAfterMs !== undefined) checkRetryAfter(retryAfterMs, where);
  if (onBusy !== 'wait' && onBusy !== 'throw' && onBusy !== 'skip') {
    throw new LockConfigError(`${where}: onBusy must be 'wait', 'throw' or 'skip', got ${describe(onBusy)}.`);
  }
  // The limit rides along as `permits`; LockEngine.acquireAll takes one permit per call.
  const acquire = { ...perCall, permits } as AcquireOptions;
  return { acquire, onBusy, retryAfterMs: retryAfterMs as number | undefined };
}
