import { LockConfigError } from '../../errors';
import { checkKnownNames, checkOptionsObject, resolvePermitAcquire, resolveSemaphore } from '../../core';
import type { OnBusy, PermitSpec, SemaphoreOptions } from '../../core';
import { checkRetryAfter } from '../retry-after';
import { CHECK_DEFAULTS, checkOnBusy } from './locked-options';
import type { CheckedLockedOptions } from './locked-options';

/**
 * Options of `@Semaphore`: the semaphore's `limit` (stored on first use, as
 * `LockService.semaphore`), and how each call,
 * which takes one permit, waits and holds.
 *
 * @example
 * ```ts
 * @Semaphore('exports', { limit: 3 })                      // at most 3 running, cluster-wide
 * @Semaphore('partner-api', { limit: 10, onBusy: 'throw' }) // full: 409 over HTTP
 * ```
 */
export type SemaphoreDecoratorOptions = SemaphoreOptions & SemaphoreCallOptions;

/** How each call of a `@Semaphore` method waits and holds: `SemaphoreDecoratorOptions` without the limit. */
interface SemaphoreCallOptions {
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
  'limit',
  'waitMs',
  'leaseMs',
  'maxHoldMs',
  'name',
  'onBusy',
  'retryAfterMs',
]);

/** Validates `@Semaphore` options where the decorator is applied, so mistakes surface at startup. */
export function checkSemaphoreDecoratorOptions(
  options: SemaphoreDecoratorOptions | undefined,
  where: string,
): CheckedLockedOptions<PermitSpec> {
  const fail = (err: unknown): never => {
    throw new LockConfigError(`${where}: ${(err as Error).message}`);
  };
  let limit = 0;
  try {
    const raw = checkOptionsObject('@Semaphore', options);
    checkKnownNames('@Semaphore', raw, NAMES);
    const { onBusy: _onBusy, retryAfterMs: _retryAfterMs, limit: given, ...perCall } = raw;
    limit = resolveSemaphore('template', { limit: given }).limit;
    resolvePermitAcquire('template', perCall, CHECK_DEFAULTS);
  } catch (err) {
    fail(err);
  }
  // An object by now (a semaphore without one has no limit). The limit goes in the lock spec,
  // beside the options of each call, which takes one permit.
  const checked: SemaphoreDecoratorOptions = options ?? { limit };
  const { onBusy = 'wait', retryAfterMs, limit: _limit, ...each } = checked;
  if (retryAfterMs !== undefined) checkRetryAfter(retryAfterMs, where);
  return { lockSpec: { kind: 'permit', limit, options: each }, onBusy: checkOnBusy(onBusy, where), retryAfterMs };
}
