import { LockConfigError } from '../../errors';
import { checkKnownNames, checkOptionsObject, checkPermits, MAX_PERMITS } from '../options/validate';
import { checkKey } from '../backend/lock-keys';

/**
 * Options of `LockService.semaphore(key, options)`: its `limit`.
 *
 * @example
 * ```ts
 * const exports = locks.semaphore('exports', { limit: 3 }); // at most 3 exports at once, cluster-wide
 * ```
 */
export interface SemaphoreOptions {
  /**
   * How many permits the semaphore has. Stored in Redis on the semaphore's first use; when a
   * limit is stored already (another instance, an earlier `setLimit`), the stored one rules,
   * also after a redeploy with a new number: apply a new number with `setLimit`.
   */
  limit: number;
}

/** Checks `semaphore(key, options)`: the key and the limit. */
export function resolveSemaphore(rawKey: unknown, rawOptions: unknown): { key: string; limit: number } {
  const key = checkKey(rawKey, 'semaphore key');
  const options = checkOptionsObject('Semaphore', rawOptions, key);
  checkKnownNames('semaphore', options, new Set(['limit']), key);
  if (options.limit === undefined) {
    throw new LockConfigError('A semaphore needs its limit: semaphore(key, { limit: n }).', key);
  }
  return { key, limit: checkPermits('limit', options.limit, MAX_PERMITS, key) };
}
