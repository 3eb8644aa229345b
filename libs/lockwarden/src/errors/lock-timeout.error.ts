import { quoteKey } from './key-text';
import { LockError } from './lock.error';

/**
 * The key is held by someone else and the wait budget ran out. Redis itself
 * answered every attempt: this is contention, not an outage.
 *
 * @example
 * ```ts
 * try {
 *   await locks.acquire('invoice:42', { waitMs: 500 });
 * } catch (err) {
 *   if (err instanceof LockTimeoutError) return res.status(409).send('busy, retry later');
 *   throw err;
 * }
 * ```
 */
export class LockTimeoutError extends LockError {
  /** How long the caller waited, in milliseconds. */
  readonly waitedMs: number;
  /**
   * How long the current holder's lease still ran at the last look, when known: a fair
   * Retry-After. Unknown when the only look was an uncontended attempt on one server (a plain
   * `SET NX`, which answers no lease), as with `waitMs: 0`.
   */
  readonly retryAfterMs: number | undefined;

  /** `permits`: a semaphore's wait, for that many permits; `limit`: the limit the caller knew. */
  constructor(key: string, waitedMs: number, retryAfterMs?: number, permits?: number, limit?: number) {
    super(
      (permits === undefined
        ? `Timed out after ${waitedMs} ms waiting for lock ${quoteKey(key)}, which is held by someone else. `
        : `Timed out after ${waitedMs} ms waiting for ${permits} permit${permits === 1 ? '' : 's'} of semaphore ` +
          `${quoteKey(key)}: ` +
          (limit !== undefined && permits > limit
            ? `that is more than its limit of ${limit} as this instance knows it; only a setLimit() ` +
              `that raises the stored limit lets it in (inspect() shows the stored limit). `
            : `they stayed taken, or the stored limit is below the ask (inspect() shows both). `)) +
        `Raise waitMs, or use tryAcquire() / onBusy: 'skip' if the work may be skipped.`,
      key,
    );
    this.waitedMs = waitedMs;
    this.retryAfterMs = retryAfterMs;
  }
}
