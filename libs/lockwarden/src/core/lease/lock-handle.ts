import type { LockLostError } from '../../errors';

/**
 * A held lock. Returned by `acquire`/`tryAcquire`, passed to `withLock`
 * callbacks, and found again with `LockService.current()`.
 *
 * @example
 * ```ts
 * const lock = await locks.acquire('ledger:7');
 * try {
 *   await ledger.append(entry, { fencingToken: await lock.fencingToken(), signal: lock.signal });
 * } finally {
 *   await lock.release();
 * }
 * ```
 */
export interface LockHandle {
  /** The key as the caller gave it (without the prefix). */
  readonly key: string;
  /**
   * The fencing token: rises strictly per key across all processes; hand it to the resource
   * you protect. Minted on first read where the grant took none (an uncontended mutex), by
   * one round trip that succeeds only while Redis still has this lock as yours; later reads,
   * and grants that ran a script anyway, resolve at once. Rejects with `LockLostError` once
   * the lock is lost or released, and with `LockBackendError` when Redis does not answer that
   * round trip within `commandTimeoutMs`. A reentrant handle shares the outer one's token.
   *
   * @example
   * ```ts
   * await locks.withLock('ledger:7', async (lock) => {
   *   await ledger.append(entry, { fencingToken: await lock.fencingToken() });
   * });
   * ```
   */
  fencingToken(): Promise<number>;
  /** Aborts, with a `LockLostError` reason, when the lock is lost. */
  readonly signal: AbortSignal;
  /**
   * Why the lock was lost (its lease ended, `maxHoldMs`, a shutdown that outlasted the
   * grace), once it was; undefined while it is held, and after a mere interruption.
   */
  readonly lostError: LockLostError | undefined;
  /** True until this handle is released or the lock is lost. */
  isHeld(): boolean;
  /**
   * Sets the remaining lease to `ms` (default: the lock's lease). Rejects with `LockLostError`
   * if the lock is no longer ours, and with `LockBackendError` when Redis fails or does not
   * answer within `commandTimeoutMs` (the watchdog goes on renewing meanwhile).
   */
  extend(ms?: number): Promise<void>;
  /**
   * Releases this handle. True when it released; false when the lock was lost, or this handle
   * released already (even by a release that failed). Rejects with `LockBackendError` when
   * Redis fails or does not answer within `commandTimeoutMs`: whether the lock is gone is then
   * unknown, but it is no longer renewed, so it ends with its lease at the latest.
   *
   * @example
   * ```ts
   * const lock = await locks.acquire('export:daily');
   * try {
   *   await runExport();
   * } finally {
   *   await lock.release();
   * }
   * ```
   */
  release(): Promise<boolean>;
}
