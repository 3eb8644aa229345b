import { LockConfigError } from '../../errors';
import { checkAcquireOptions, checkReadWriteOptions, describe } from '../../core';
import type { AcquireOptions, LockedSpec, OnBusy } from '../../core';
import { checkRetryAfter } from '../retry-after';

/**
 * Options of `@Locked`, `@ReadLocked` and `@WriteLocked`.
 *
 * @example
 * ```ts
 * @Locked('report:{0}', { onBusy: 'skip' })      // another instance is on it: do nothing
 * @Locked('invoice:{0.id}', { waitMs: 2_000 })    // wait up to 2 s, then LockTimeoutError
 * @Locked('import', { onBusy: 'throw' })          // busy: LockTimeoutError at once (409 over HTTP)
 * ```
 */
export interface LockedOptions extends AcquireOptions {
  /** `'wait'` (default) waits up to `waitMs`; `'throw'` rejects at once with `LockTimeoutError`; `'skip'` resolves `undefined` without running the method. */
  onBusy?: OnBusy;
  /** `@ReadLocked` only: wait behind writers that are already waiting. Default true. */
  writerPreference?: boolean;
  /**
   * On a route: the `Retry-After` of its 409 when busy, in ms (sent in whole seconds, at
   * least 1). Default: the module's `retryAfterMs`, else 1 000. Say how long the work takes.
   */
  retryAfterMs?: number;
}

/** What a lock decorator checked where it was applied: what each call asks for, and what it does when busy. */
export interface CheckedLockedOptions<R> {
  readonly lockSpec: R;
  readonly onBusy: OnBusy;
  readonly retryAfterMs: number | undefined;
}

/** Defaults for checking options where a decorator is applied, before any engine exists. */
export const CHECK_DEFAULTS = { keyPrefix: '', leaseMs: 30_000, waitMs: 0, safetyMarginMs: undefined };

/** The option names only a decorator takes, beside the acquire options. */
const DECORATOR_ONLY: ReadonlySet<string> = new Set(['onBusy', 'retryAfterMs']);
const RW_DECORATOR_ONLY: ReadonlySet<string> = new Set(['onBusy', 'writerPreference', 'retryAfterMs']);

/** Validates decorator options where the decorator is applied, so mistakes surface at startup. */
export function checkLockedOptions(
  kind: 'mutex' | 'read' | 'write',
  options: LockedOptions | undefined,
  where: string,
): CheckedLockedOptions<LockedSpec> {
  const readWrite = kind !== 'mutex';
  try {
    checkAcquireOptions(options, CHECK_DEFAULTS, readWrite ? RW_DECORATOR_ONLY : DECORATOR_ONLY);
  } catch (err) {
    throw new LockConfigError(`${where}: ${(err as Error).message}`);
  }
  const { onBusy = 'wait', retryAfterMs, ...acquire } = options ?? {};
  if (retryAfterMs !== undefined) checkRetryAfter(retryAfterMs, where);
  if (readWrite) {
    try {
      checkReadWriteOptions(acquire);
    } catch (err) {
      throw new LockConfigError(`${where}: ${(err as Error).message}`);
    }
  }
  return { lockSpec: { kind, options: acquire }, onBusy: checkOnBusy(onBusy, where), retryAfterMs };
}

/** What a decorated method does when busy: `'wait'`, `'throw'` or `'skip'`. */
export function checkOnBusy(value: unknown, where: string): OnBusy {
  if (value !== 'wait' && value !== 'throw' && value !== 'skip') {
    throw new LockConfigError(`${where}: onBusy must be 'wait', 'throw' or 'skip', got ${describe(value)}.`);
  }
  return value;
}
