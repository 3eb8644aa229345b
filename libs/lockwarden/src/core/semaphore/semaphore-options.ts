import { LockConfigError } from '../../errors';
import { checkKey, checkKnownNames, checkOptionsObject, checkPermits, MAX_PERMITS } from '../engine/validate';

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

/** Checks `semaphore(key, options)`: the key and the limit. */
export function resolveSemaphore(rawKey: unknown, rawOptions: unknown): { key: string; limit: number } {
  const key = checkKey(rawKey, 'semaphore key');
  const options = checkOptionsObject('Semaphore', rawOptions, key);
  checkKnownNames('semaphore', options, new Set(['permits']), key);
  if (options.permits === undefined) {
    throw new LockConfigError('A semaphore needs its number of permits: semaphore(key, { permits: n }).', key);
  }
  return { key, limit: checkPermits('permits', options.permits, MAX_PERMITS, key) };
}
