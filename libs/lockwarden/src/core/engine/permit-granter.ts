import { LockTimeoutError } from '../../errors';
import type { LeaseHandle } from '../lease/lease';
import { checkKey, semKeys } from '../backend/lock-keys';
import type { SemKeys } from '../backend/lock-keys';
import { noSemaphore } from '../backend/lock-store';
import type { LockStore } from '../backend/lock-store';
import type { SemaphoreInfo } from '../backend/lock-info';
import type { HeldLocks } from './held-locks';
import type { LeaseGranter } from './lease-granter';
import { resolvePermitAcquire } from '../semaphore/permit-options';
import type { PermitOptions, ResolvedPermitAcquire } from '../semaphore/permit-options';
import type { LockDefaults } from '../options/options';
import { checkPermits, MAX_PERMITS } from '../options/validate';

/**
 * The engine's permit path: what a Semaphore builds on, and what a decorated call that takes
 * one permit per key goes through. New holders come from the LeaseGranter, like locks.
 */
export class PermitGranter {
  constructor(
    readonly defaults: LockDefaults,
    private readonly store: LockStore,
    private readonly granter: LeaseGranter,
    private readonly held: HeldLocks,
  ) {}

  /** Whether semaphores are available; when not (quorum), the error to throw for `key`. */
  check(key: string): void {
    if (!this.store.semaphores) throw noSemaphore(key);
  }

  /**
   * `req.permits` permits of the semaphore at `keys`, or LockTimeoutError naming the ask
   * and `limit` (the limit the caller knows) when none came free within the wait.
   */
  async acquire(req: ResolvedPermitAcquire, keys: SemKeys, limit: number): Promise<LeaseHandle> {
    try {
      return await this.granter.orThrow(req, this.granter.permits(req, keys, req.permits, limit));
    } catch (err) {
      if (!(err instanceof LockTimeoutError)) throw err;
      throw new LockTimeoutError(req.key, err.waitedMs, err.retryAfterMs, req.permits, limit);
    }
  }

  /** One attempt: the handle when the permits were free, null when they are not. */
  async tryAcquire(req: ResolvedPermitAcquire, keys: SemKeys, limit: number): Promise<LeaseHandle | null> {
    const got = await this.granter.permits({ ...req, waitMs: 0 }, keys, req.permits, limit);
    return typeof got === 'number' ? null : got;
  }

  /**
   * Permits of the semaphore `key` whose limit is `limit`, with the checks `semaphore(key,
   * { limit })` makes first; `once`: one attempt, null when busy.
   */
  async take(key: string, limit: number, options: PermitOptions, once: boolean): Promise<LeaseHandle | null> {
    checkKey(key, 'semaphore key');
    checkPermits('permits', limit, MAX_PERMITS, key);
    this.check(key);
    const req = resolvePermitAcquire(key, options, this.defaults);
    const keys = semKeys(this.defaults.keyPrefix, key);
    return once ? this.tryAcquire(req, keys, limit) : this.acquire(req, keys, limit);
  }

  /** Runs `fn` holding `handle` and releases it once `fn` settled (HeldLocks.runLocked). */
  runLocked<T>(handle: LeaseHandle, fn: () => T | Promise<T>): Promise<T> {
    return this.held.runLocked([handle], fn);
  }

  /** Stores the limit and wakes waiters when it rose; the previous limit. */
  setLimit(keys: SemKeys, limit: number): Promise<number> {
    return this.store.semLimit(keys, limit);
  }

  /** The stored limit and the live holders. */
  inspect(keys: SemKeys, key: string): Promise<SemaphoreInfo> {
    return this.store.semInspect(keys, key);
  }
}
