import { LockBackendError, LockLostError } from '../../errors';
import type { MutexKeys } from '../backend/lock-keys';
import type { LockStore } from '../backend/lock-store';
import type { Lease } from '../lease/lease';
import type { Watchdog } from '../lease/watchdog';

// What the held locks ask the store for a held mutex lease, beside the watchdog's renewals:
// its fencing token, minted on first read, and its release. The permits' twin is
// semaphore/permit-release.ts.

/**
 * The fencing token of a mutex lease granted without one (a plain `SET NX PX`), minted now
 * (fence-mint.lua) while the key is still ours. A lease whose key is no longer ours is lost,
 * as the watchdog would lose it.
 */
export async function mintOnFirstRead(
  store: LockStore,
  watchdog: Watchdog,
  lease: Lease,
  keys: MutexKeys,
  /** Bounds the call by commandTimeoutMs: a holder awaiting Redis through a partition is told, not kept. */
  inBudget: <T>(call: Promise<T>) => Promise<T>,
): Promise<number> {
  let token: number;
  try {
    token = await inBudget(store.mint(keys, lease.ownerToken));
  } catch (err) {
    throw new LockBackendError(lease.key, 'read the fencing token of', err);
  }
  lease.check();
  if (token > 0 && lease.state === 'held') {
    lease.mintedToken = token;
    lease.trace?.minted(token);
    return token;
  }
  if (token <= 0) {
    const reason = 'the key is no longer ours in Redis (it expired or was deleted)';
    watchdog.untrack(lease);
    watchdog.lost(lease, reason); // the held locks stop counting it (Watchdog.onLost)
  }
  throw lease.lostError ?? new LockLostError(lease.key, `it was ${lease.state} while its fencing token was read`);
}

/**
 * Releases a held mutex lease. It tells the store whether someone may wait for the lock: this
 * process's waiters (`waitedOn`, the channels they wait on) or a busy answer on the way in
 * (`Lease.contended`). A store may then release a lock nobody waited for with fewer keys
 * (HeldRelease).
 */
export function releaseMutex(
  store: LockStore,
  lease: Lease,
  keys: MutexKeys,
  waitedOn: ReadonlySet<string>,
): Promise<boolean> {
  const waited = lease.contended || waitedOn.has(keys.channel);
  return store.releaseHeld({ keys, ownerToken: lease.ownerToken, waited, fence: lease.mintedToken });
}
