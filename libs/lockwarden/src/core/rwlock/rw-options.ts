import { LockConfigError } from '../../errors';
import type { AcquireOptions } from '../options/options';
import { checkBoolean } from '../options/validate';

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
 * The rules read/write options add, stated once for the engine and for `@ReadLocked` /
 * `@WriteLocked` where they are applied: `writerPreference` is a boolean, and `fair` is not an
 * option (writer preference is how read/write locks order their waiters).
 *
 * @example
 * ```ts
 * checkReadWriteOptions({ writerPreference: false }, 'report:7'); // passes
 * checkReadWriteOptions({ fair: true }, 'report:7'); // throws LockConfigError
 * ```
 */
export function checkReadWriteOptions(
  options: { readonly fair?: unknown; readonly writerPreference?: unknown } | undefined,
  key?: string,
): void {
  checkBoolean('writerPreference', options?.writerPreference, key);
  if (options?.fair !== undefined) {
    throw new LockConfigError('fair is not an option of read/write locks: they use writer preference instead.', key);
  }
}
