import { LockConfigError } from '../../errors';
import { describe } from './validate';
import type { AcquireOptions } from './options';

/** What a decorated method does when its lock is held by someone else. */
export type OnBusy = 'wait' | 'throw' | 'skip';

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
  readonly request: R;
  readonly onBusy: OnBusy;
  readonly retryAfterMs: number | undefined;
}

/** The option names only a decorator takes, beside the acquire options. */
export const DECORATOR_ONLY: ReadonlySet<string> = new Set(['onBusy', 'retryAfterMs']);
/** Defaults for checking options where a decorator is applied, before any engine exists. */
export const CHECK_DEFAULTS = { keyPrefix: '', leaseMs: 30_000, waitMs: 0, safetyMarginMs: undefined };

/** What a decorated method does when busy: `'wait'`, `'throw'` or `'skip'`. */
export function checkOnBusy(value: unknown, where: string): OnBusy {
  if (value !== 'wait' && value !== 'throw' && value !== 'skip') {
    throw new LockConfigError(`${where}: onBusy must be 'wait', 'throw' or 'skip', got ${describe(value)}.`);
  }
  return value;
}

/** A Retry-After hint in ms: a whole number from 0 to one day. */
export function checkRetryAfter(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 86_400_000) {
    throw new LockConfigError(`${where}: retryAfterMs must be an integer from 0 to 86400000, got ${describe(value)}.`);
  }
  return value;
}
