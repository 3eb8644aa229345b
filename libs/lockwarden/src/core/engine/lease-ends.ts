import type { LockBackendError, LockLostError } from '../../errors';
import { quoteKey } from '../../errors/key-text';
import { lostAfterWork } from '../../errors/lock-lost.error';
import { redisReason } from '../../errors/redis-reason';
import type { Lease } from '../lease/lease';
import type { LockEvent } from '../observe/events';
import { logError } from '../observe/logger';
import type { LockLogger } from '../observe/logger';

// What is said when a lease ends otherwise than by a plain release: a release that failed (once,
// in shutdown or after the work), a key its release found gone, and locked work that ran to its
// end after its lock was lost.

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

/** What the event of a lease's end says of it. */
function endOf(lease: Lease): { key: string; name: string; fencingToken: number | undefined; heldMs: number } {
  return {
    key: lease.key,
    name: lease.name,
    fencingToken: lease.mintedToken,
    heldMs: Math.round(performance.now() - lease.heldSince),
  };
}

/**
 * The release of a held lease found its key no longer ours: Redis dropped it (eviction, an
 * operator's DEL or forceUnlock, FLUSHALL, a failover that lost it) while it was held. The
 * lease ends as lost, not released, and the work under it is told (runLocked rejects).
 */
export function lostAtRelease(lease: Lease, emit: ((event: LockEvent) => void) | undefined): void {
  const reason = 'its key was gone from Redis when it was released (evicted, deleted, flushed, or lost in a failover)';
  lease.lostAtRelease(reason);
  emit?.({ type: 'lost', reason, ...endOf(lease) });
}

/** Losses after work already said and counted: a framework reporting the same one again (LockEngine.lostAfterWork) is not a second. */
const UNPROTECTED_TOLD = new WeakSet<LockLostError>();

/**
 * Locked work ran to its end, but its lock was lost meanwhile or found gone at its release:
 * its effects happened while another holder may have held the lock. Said at ERROR, counted
 * (an 'unprotected' event), and returned as the LockLostError its caller gets, which says so
 * (`workCompleted`), so that nobody is told to simply run it again.
 */
export function reportLostAfterWork(
  logger: LockLogger,
  emit: ((event: LockEvent) => void) | undefined,
  lost: LockLostError,
  name: string | undefined,
): LockLostError {
  const told = lostAfterWork(lost);
  if (UNPROTECTED_TOLD.has(told)) return told;
  UNPROTECTED_TOLD.add(told);
  const key = told.key!;
  logError(
    logger,
    `Locked work on ${quoteKey(key)} ran to its end after its lock was lost (${told.reason}): its effects ` +
      'happened while the lock may have been held elsewhere.',
  );
  emit?.({ type: 'unprotected', key, name, reason: told.reason });
  return told;
}
