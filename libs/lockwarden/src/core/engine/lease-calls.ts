import { LockBackendError, LockLostError } from '../../errors';
import type { Lease } from '../lease/lease';
import type { Watchdog } from '../lease/watchdog';
import type { LockEvent } from '../observe/events';
import type { LockStore } from '../backend/lock-store';
import { checkInteger, MAX_MS, MIN_LEASE_MS } from '../options/validate';

/**
 * A holder's own call on its lease of any kind, through its handle: extending it. A call that
 * finds the key no longer ours loses the lease, as the watchdog would. Reading a mutex's
 * fencing token, minted on first read after a plain grant, is the mutex's
 * (mutex/mutex-lease.ts).
 */
export class LeaseCalls {
  constructor(
    private readonly store: LockStore,
    private readonly watchdog: Watchdog,
    private readonly emit: ((event: LockEvent) => void) | undefined,
    /** Bounds a call by commandTimeoutMs: a holder awaiting Redis through a partition is told, not kept. */
    private readonly inBudget: <T>(call: Promise<T>) => Promise<T>,
  ) {}

  /** `extend(ms)`: sets the lease back to `ms` (its lease time by default), within `maxHoldMs`. */
  async extend(lease: Lease, ms: number | undefined): Promise<void> {
    const leaseMs = ms === undefined ? lease.leaseMs : checkInteger('extend(ms)', ms, MIN_LEASE_MS, MAX_MS, lease.key);
    if (lease.state !== 'held') throw new LockLostError(lease.key, `it was already ${lease.state}`);
    const sentAt = performance.now();
    const grantedMs = Math.min(leaseMs, Math.floor(lease.maxHoldUntil - sentAt));
    if (grantedMs < MIN_LEASE_MS) throw new LockLostError(lease.key, 'it reached its maxHoldMs and cannot be extended');
    let renewed: boolean[];
    try {
      renewed = await this.inBudget(
        this.store.renew([
          { redisKey: lease.keys.lock, ownerToken: lease.ownerToken, leaseMs: grantedMs, kind: lease.kind },
        ]),
      );
    } catch (err) {
      throw new LockBackendError(lease.key, 'extend', err);
    }
    if (lease.state !== 'held') throw new LockLostError(lease.key, `it was ${lease.state} while extending`);
    if (!renewed[0]) {
      const reason = 'the key is no longer ours in Redis (it expired or was deleted)';
      this.watchdog.untrack(lease);
      this.watchdog.lost(lease, reason); // the held locks stop counting it (Watchdog.onLost)
      throw lease.lostError ?? new LockLostError(lease.key, reason);
    }
    lease.leaseMs = leaseMs;
    lease.confirm(sentAt, grantedMs);
    this.watchdog.reschedule(lease);
    this.emit?.({ type: 'extended', key: lease.key, name: lease.name, fencingToken: lease.mintedToken });
  }
}
