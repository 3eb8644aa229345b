import { LockConfigError } from '../../errors';
import { checkKey, checkKnownNames, checkOptionsObject, checkPermits, MAX_PERMITS } from '../options/validate';

/**
 * Options of `LockService.semaphore(key, options)`: its `limit`. The deprecated name `permits`
 * still works; given both, they must agree.
 *
 * @example
 * ```ts
 * const exports = locks.semaphore('exports', { limit: 3 }); // at most 3 exports at once, cluster-wide
 * ```
 */
export type SemaphoreOptions =
  | {
      /**
       * How many permits the semaphore has. Stored in Redis on the semaphore's first use; when a
       * limit is stored already (another instance, an earlier `setLimit`), the stored one rules,
       * also after a redeploy with a new number: apply a new number with `setLimit`.
       */
      limit: number;
      /** @deprecated Use limit. */
      permits?: number;
    }
  | {
      limit?: number;
      /** @deprecated Use limit. */
      permits: number;
    };

/** The limit given as `limit` or as the deprecated `permits`; LockConfigError when they differ. */
export function pickLimit(options: { limit?: unknown; permits?: unknown }, key?: string): unknown {
  const { limit, permits } = options;
  if (limit !== undefined && permits !== undefined && limit !== permits) {
    throw new LockConfigError(
      `A semaphore's limit was given twice with different values: limit ${String(limit)} and permits ` +
        `${String(permits)} (the deprecated name of limit). Give limit only.`,
      key,
    );
  }
  return limit ?? permits;
}

/** Checks `semaphore(key, options)`: the key and the limit. */
export function resolveSemaphore(rawKey: unknown, rawOptions: unknown): { key: string; limit: number } {
  const key = checkKey(rawKey, 'semaphore key');
  const options = checkOptionsObject('Semaphore', rawOptions, key);
  checkKnownNames('semaphore', options, new Set(['limit', 'permits']), key);
  const limit = pickLimit(options, key);
  if (limit === undefined) {
    throw new LockConfigError('A semaphore needs its limit: semaphore(key, { limit: n }).', key);
  }
  return { key, limit: checkPermits(options.limit === undefined ? 'permits' : 'limit', limit, MAX_PERMITS, key) };
}
