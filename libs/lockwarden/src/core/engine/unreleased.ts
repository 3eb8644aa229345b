import type { LockBackendError } from '../../errors';
import { redisReason } from '../../errors/redis-reason';
import type { Lease } from '../lease/lease';
import type { LockLogger } from '../observe/logger';

// What a release that failed says: once, in shutdown or after the work (HeldLocks.releaseAll).

/** Release failures already told of (at shutdown): releaseAll does not log them again. */
const UNRELEASED_TOLD = new WeakSet<Error>();

/** A release that failed in shutdown is said once, here (most often a shared client was closed first). */
export function warnUnreleased(logger: LockLogger, lease: Lease, error: LockBackendError): void {
  const leftMs = Math.max(0, Math.round(lease.expiresAt - performance.now()));
  logger.warn(
    `Could not release lock "${lease.key}" while shutting down (${redisReason(error.cause)}): it stays held ` +
      `until its lease ends, in at most ${leftMs} ms. If its Redis client is shared with another module, ` +
      'that module closed it first: the client must outlive the lock service.',
  );
  UNRELEASED_TOLD.add(error);
}

/** A release after the work that failed: logged, never thrown (the lease, unrenewed, runs out). */
export function warnNotReleased(logger: LockLogger, key: string, err: unknown): void {
  if (err instanceof Error && UNRELEASED_TOLD.has(err)) return;
  logger.warn(
    `Could not release lock "${key}"; it will expire with its lease: ${err instanceof Error ? err.message : String(err)}`,
  );
}
