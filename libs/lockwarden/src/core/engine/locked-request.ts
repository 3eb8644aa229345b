import { LockConfigError } from '../../errors';
import { checkAcquireOptions } from '../options/options';
import type { AcquireOptions } from '../options/options';
import { CHECK_DEFAULTS, checkOnBusy, checkRetryAfter, DECORATOR_ONLY } from '../options/locked-options';
import type { CheckedLockedOptions, LockedOptions } from '../options/locked-options';
import { checkReadWriteOptions } from '../rwlock/rw-options';
import type { RwAcquireOptions } from '../rwlock/rw-options';

// What `@Locked`, `@ReadLocked` and `@WriteLocked` ask of each key, checked where they are
// applied: the request LockEngine.lockAndRun takes (with `@Semaphore`'s, a LockRequest).

/** What `@Locked`, `@ReadLocked` and `@WriteLocked` ask of each key (with `@Semaphore`'s, a LockRequest). */
export type LockedRequest =
  | { readonly kind: 'mutex'; readonly options: AcquireOptions }
  | { readonly kind: 'read' | 'write'; readonly options: RwAcquireOptions };

const RW_DECORATOR_ONLY: ReadonlySet<string> = new Set(['onBusy', 'writerPreference', 'retryAfterMs']);

/** Validates decorator options where the decorator is applied, so mistakes surface at startup. */
export function checkLockedOptions(
  kind: 'mutex' | 'read' | 'write',
  options: LockedOptions | undefined,
  where: string,
): CheckedLockedOptions<LockedRequest> {
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
  return { request: { kind, options: acquire }, onBusy: checkOnBusy(onBusy, where), retryAfterMs };
}
