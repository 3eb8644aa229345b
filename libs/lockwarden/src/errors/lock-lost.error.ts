import { quoteKey } from './key-text';
import { LockError } from './lock.error';

/**
 * The lock stopped being ours while the protected code could still run: the
 * lease could not be renewed in time, the key vanished from Redis (evicted, deleted, lost in
 * a failover), the client went away, or the application is shutting down. It is the
 * `reason` of the handle's aborted `signal`, and what `withLock` rejects with.
 *
 * When `workCompleted` is true the protected work had already run to its end when the loss
 * was found (by the release, or by the signal after the work returned): its effects happened
 * while the lock may have been held elsewhere. Check or compensate; do not simply run it again.
 *
 * @example
 * ```ts
 * try {
 *   await locks.withLock('import:users', async (lock) => {
 *     for (const batch of batches) {
 *       lock.signal.throwIfAborted(); // throws LockLostError once the lock is gone
 *       await importBatch(batch, await lock.fencingToken());
 *     }
 *   });
 * } catch (err) {
 *   if (err instanceof LockLostError && err.workCompleted) await audit.checkImport();
 *   else throw err;
 * }
 * ```
 */
export class LockLostError extends LockError {
  /** Why the lock was lost, as a clause ("its key was evicted by Redis ..."). */
  readonly reason: string;
  /** The protected work ran to its end before the loss was found: it ran while the lock may have been held elsewhere. */
  readonly workCompleted: boolean;

  constructor(key: string, reason: string, options?: { cause?: unknown; workCompleted?: boolean }) {
    const workCompleted = options?.workCompleted === true;
    super(
      `Lock ${quoteKey(key)} was lost: ${reason}. ` +
        (workCompleted
          ? 'The work it protected ran to its end, while the lock may have been held elsewhere: check its effects ' +
            'before running it again.'
          : 'Stop the protected work; another holder may now run it.'),
      key,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.reason = reason;
    this.workCompleted = workCompleted;
  }
}

/**
 * The loss `err` reports, as found once the protected work had run to its end: what a caller
 * of locked work receives when the work completed but its lock was lost meanwhile.
 */
export function lostAfterWork(err: LockLostError): LockLostError {
  if (err.workCompleted) return err;
  return new LockLostError(err.key!, err.reason, { cause: err.cause, workCompleted: true });
}
