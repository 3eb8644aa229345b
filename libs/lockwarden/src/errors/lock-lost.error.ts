import { quoteKey } from './key-text';
import { LockError } from './lock.error';

/**
 * The lock stopped being ours while the protected code could still run: the
 * lease could not be renewed in time, the key vanished from Redis, the client
 * went away, or the application is shutting down. It is the `reason` of the
 * handle's aborted `signal`, and what `withLock` rejects with.
 *
 * @example
 * ```ts
 * await locks.withLock('import:users', async (lock) => {
 *   for (const batch of batches) {
 *     lock.signal.throwIfAborted(); // throws LockLostError once the lock is gone
 *     await importBatch(batch, await lock.fencingToken());
 *   }
 * });
 * ```
 */
export class LockLostError extends LockError {
  constructor(key: string, reason: string, options?: { cause?: unknown }) {
    super(
      `Lock ${quoteKey(key)} was lost: ${reason}. Stop the protected work; another holder may now run it.`,
      key,
      options,
    );
  }
}
