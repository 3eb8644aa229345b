import { Injectable } from '@nestjs/common';
import { LockEngine, LeadershipRegistry, currentTick } from '../core';
import type {
  Leadership,
  LockHealthReport,
  LockInfo,
  LockHandle,
  AcquireOptions,
  RwAcquireOptions,
  PermitScope,
  Semaphore,
  SemaphoreOptions,
  ScheduledTick,
} from '../core';
import { bare, inRequest, withRequestSignal } from './request-lock-scope';

/**
 * Distributed locks on Redis, injectable anywhere once `LockModule` is imported.
 *
 * Reentrancy follows the async flow: inside a `withLock` callback (or a
 * `@Locked` method) a nested acquire of the same key re-enters the held lock
 * instead of deadlocking. A bare `acquire()` outside such a callback is always
 * a new holder.
 *
 * @example
 * ```ts
 * @Injectable()
 * export class PayoutService {
 *   constructor(private readonly locks: LockService) {}
 *
 *   pay(accountId: string) {
 *     return this.locks.withLock(`payout:${accountId}`, async (handle) => {
 *       handle.signal.throwIfAborted();
 *       await this.ledger.write(accountId, { fencingToken: await handle.fencingToken() });
 *     });
 *   }
 * }
 * ```
 */
@Injectable()
export class LockService {
  /** The framework-free engine; it is also a provider of its own (inject `LockEngine`). */
  readonly lockEngine: LockEngine;

  constructor(
    private readonly engine: LockEngine,
    private readonly leaderships: LeadershipRegistry,
  ) {
    this.lockEngine = engine;
  }

  /**
   * Waits up to `waitMs` for the lock and returns its handle. Rejects with
   * `LockTimeoutError` when someone else held it all along, `LockBackendError`
   * when Redis failed, `LockAbortedError` when `signal` fired.
   *
   * @example
   * ```ts
   * const lock = await locks.acquire('invoice:42', { waitMs: 2_000 });
   * try { await send(invoice); } finally { await lock.release(); }
   * ```
   */
  acquire(key: string, options?: AcquireOptions): Promise<LockHandle> {
    return bare(this.engine.acquire(key, withRequestSignal(options)));
  }

  /**
   * One attempt: the handle when the lock was free, `null` when it is held. Rejects with
   * `LockBackendError` when Redis has not answered in time (see docs/locks.md, "When Redis does
   * not answer").
   *
   * @example
   * ```ts
   * const lock = await locks.tryAcquire('cache:rebuild');
   * if (!lock) return; // someone else is rebuilding
   * ```
   */
  tryAcquire(key: string, options?: AcquireOptions): Promise<LockHandle | null> {
    return bare(this.engine.tryAcquire(key, withRequestSignal(options)));
  }

  /**
   * Runs `fn` while holding the lock and releases it afterwards, also when
   * `fn` throws. A release error never hides `fn`'s own error. Rejects with
   * `LockLostError` when the lock was lost before `fn` settled.
   *
   * @example
   * ```ts
   * const total = await locks.withLock('stock:sku-1', async (handle) => {
   *   return inventory.reserve('sku-1', 2, { signal: handle.signal });
   * });
   * ```
   */
  withLock<T>(key: string, fn: (handle: LockHandle) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    return this.engine.withLock(key, inRequest(fn), withRequestSignal(options));
  }

  /**
   * A shared (read) lease on a read/write lock: many readers at once, never together
   * with a writer. Each reader has its own owner token and lease. Once a
   * writer waits, new readers queue behind it (`writerPreference: false` lets
   * a reader overtake).
   *
   * @example
   * ```ts
   * const lock = await locks.acquireRead('catalog');
   * try { return await catalog.snapshot(); } finally { await lock.release(); }
   * ```
   */
  acquireRead(key: string, options?: RwAcquireOptions): Promise<LockHandle> {
    return bare(this.engine.acquireRead(key, withRequestSignal(options)));
  }

  /**
   * An exclusive (write) lease on a read/write lock, with a fencing token that rises
   * per key. Inside a read lease of the same key it rejects at once with
   * `LockUpgradeError`.
   *
   * @example
   * ```ts
   * const lock = await locks.acquireWrite('catalog', { waitMs: 5_000 });
   * try { await catalog.rebuild(await lock.fencingToken()); } finally { await lock.release(); }
   * ```
   */
  acquireWrite(key: string, options?: RwAcquireOptions): Promise<LockHandle> {
    return bare(this.engine.acquireWrite(key, withRequestSignal(options)));
  }

  /**
   * Runs `fn` under a read lease, like `withLock`. Reads re-enter reads. Inside
   * a write lease of the same key it takes a real read lease (a downgrade) that
   * stays after the write is released.
   *
   * @example
   * ```ts
   * const price = await locks.withReadLock('prices', () => prices.get('sku-1'));
   * ```
   */
  withReadLock<T>(key: string, fn: (handle: LockHandle) => T | Promise<T>, options?: RwAcquireOptions): Promise<T> {
    return this.engine.withReadLock(key, inRequest(fn), withRequestSignal(options));
  }

  /**
   * Runs `fn` under a write lease, like `withLock`.
   *
   * @example
   * ```ts
   * await locks.withWriteLock('prices', async (handle) => prices.replaceAll(feed, await handle.fencingToken()));
   * ```
   */
  withWriteLock<T>(key: string, fn: (handle: LockHandle) => T | Promise<T>, options?: RwAcquireOptions): Promise<T> {
    return this.engine.withWriteLock(key, inRequest(fn), withRequestSignal(options));
  }

  /**
   * A counting semaphore across every instance: at most `permits` permits held at once.
   * Each holder (`acquire`, `tryAcquire`, `withPermit`) is a lease like a lock's, with its
   * own fencing token, renewed by the watchdog, and given back by a crash one lease later.
   * The limit is stored in Redis on first use, and `setLimit(n)` changes it for everyone.
   * Throws `LockConfigError` for a bad key or limit, and with a quorum, where a permit
   * count cannot be kept safe without a consensus protocol.
   *
   * @example
   * ```ts
   * const exports = locks.semaphore('exports', { limit: 3 });
   * await exports.withPermit(async (handle) => {
   *   await exporter.run({ signal: handle.signal, fencingToken: await handle.fencingToken() });
   * }, { waitMs: 30_000 });
   * ```
   */
  semaphore(key: string, options: SemaphoreOptions): Semaphore {
    return this.engine.semaphore(key, options, REQUEST_PERMIT_SCOPE);
  }

  /**
   * The innermost lock held by the calling async context (for `key`, when
   * given): how decorated methods reach their signal and fencing token.
   *
   * @example
   * ```ts
   * const lock = locks.current('order:7');
   * await repo.save(order, { fencingToken: await lock?.fencingToken() });
   * ```
   */
  current(key?: string): LockHandle | undefined {
    return this.engine.current(key);
  }
  /**
   * The scheduled tick the calling async context runs, inside a `@ScheduledLock` method
   * (and what it calls). Undefined elsewhere.
   *
   * @example
   * ```ts
   * @Cron('0 0 12 * * *')
   * @ScheduledLock('lottery:daily-draw', { onMissed: 'run' })
   * async draw() {
   *   const { at, catchUp } = this.locks.currentTick()!;
   *   await this.lottery.draw(at.toISOString().slice(0, 10), { catchUp });
   * }
   * ```
   */
  currentTick(): ScheduledTick | undefined {
    return currentTick();
  }

  /**
   * Who holds `key` and how: `held`, `kind` ('mutex' | 'read' | 'write'), the holders'
   * instance ids and remaining leases, the fencing token and the queued waiters. Owner
   * tokens are never exposed.
   *
   * @example
   * ```ts
   * const info = await locks.inspect('lottery:2026-11-22');
   * // { key, held: true, kind: 'mutex', holders: [{ instanceId: 'web-2:4121', leaseLeftMs: 28_410 }],
   * //   leaseLeftMs: 28_410, fencingToken: null, waiters: 0 }  (null: the holder has not read its token)
   * ```
   */
  inspect(key: string): Promise<LockInfo> {
    return this.engine.inspect(key);
  }

  /**
   * **Dangerous.** Deletes `key`'s lock whoever holds it and wakes its waiters. Nothing is
   * aborted remotely: each holder learns of it at its next renewal, and until then it may
   * run beside the next holder. Use it to clear a lock you know is stuck, and protect the
   * resource with fencing tokens. Resolves true when a lock was held.
   *
   * @example
   * ```ts
   * if (await locks.forceUnlock('reports:daily')) logger.warn('cleared a stuck reports lock');
   * ```
   */
  forceUnlock(key: string): Promise<boolean> {
    return this.engine.forceUnlock(key);
  }

  /**
   * Leader election for `name` (the same object for every call with that name): campaign,
   * resign, ask who leads, follow every change. Terms are leases of the lock
   * `leader:<name>`, kept by the watchdog, each with its own fencing token. Throws
   * `LockConfigError` for a name that is not a non-empty string.
   *
   * @example
   * ```ts
   * const leadership = locks.leadership('reports');
   * await leadership.campaign();
   * await buildReports({ signal: leadership.signal, fencingToken: leadership.currentTerm!.fencingToken });
   * await leadership.resign();
   * ```
   */
  leadership(name: string): Leadership {
    return this.leaderships.leadership(name);
  }

  /**
   * Whether Redis answers (every server, each Cluster master, or a majority of a quorum), how
   * fast, whether the scripts are loaded, and how the watchdog keeps up. Never rejects: a
   * server that does not answer within `timeoutMs` is reported as down, with why. What
   * `LockHealthIndicator` reports to `@nestjs/terminus` (1 s unless given).
   *
   * @example
   * ```ts
   * const report = await locks.health();
   * if (!report.reachable) logger.warn(`locks unavailable: ${report.error}`);
   * ```
   */
  health(timeoutMs?: number): Promise<LockHealthReport> {
    return this.engine.health(timeoutMs);
  }
}

/**
 * Permits taken through LockService follow the request as locks do: a wait is cancelled when
 * the client goes away, and a bare permit still held when the request is over is released
 * then, with one warning (withPermit releases its own).
 */
const REQUEST_PERMIT_SCOPE: PermitScope = { options: withRequestSignal, bare, held: inRequest };
