import { quoteKey } from './key-text';
import { LockError } from './lock.error';

/**
 * The holder is asked to stop: the application is shutting down, or the HTTP
 * client went away. It is the `reason` of the handle's aborted `signal`. Unlike
 * {@link LockLostError}, the lock is still held until the work ends (or the
 * request finishes), so finishing quickly is safe.
 *
 * @example
 * ```ts
 * await locks.withLock('export', async (lock) => {
 *   for (const page of pages) {
 *     if (lock.signal.aborted) return saveProgress(page); // shutting down or client gone
 *     await exportPage(page);
 *   }
 * });
 * ```
 */
export class LockInterruptedError extends LockError {
  constructor(key: string, reason: string) {
    super(
      `Work under lock ${quoteKey(key)} is asked to stop: ${reason}. The lock is still held until the work ends.`,
      key,
    );
  }
}
