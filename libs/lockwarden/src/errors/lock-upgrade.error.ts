import { quoteKey } from './key-text';
import { LockError } from './lock.error';

/**
 * A write lock was requested by a flow that holds only a read lock on the
 * same key. Upgrading would deadlock as soon as two readers tried it, so it is
 * refused at once. Release the read lock first, or take the write lock from
 * the start.
 *
 * @example
 * ```ts
 * await locks.withReadLock('doc:1', async () => {
 *   await locks.acquireWrite('doc:1'); // rejects with LockUpgradeError
 * });
 * ```
 */
export class LockUpgradeError extends LockError {
  constructor(key: string) {
    super(
      `Cannot take a write lock on ${quoteKey(key)} while this flow holds only a read lock on it (an upgrade would deadlock). ` +
        `Release the read lock first, or take the write lock from the start.`,
      key,
    );
  }
}
