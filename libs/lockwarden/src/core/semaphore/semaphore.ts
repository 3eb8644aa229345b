import { LockBackendError, LockError } from '../../errors';
import { resolvePermitAcquire } from './permit-options';
import type { PermitOptions } from './permit-options';
import type { PermitHost } from './permit-host';
import { checkFunction, checkPermits, MAX_PERMITS } from '../options/validate';
import type { LeaseHandle } from '../lease/lease';
import type { LockHandle } from '../lease/lock-handle';
import { semKeys } from '../backend/lock-keys';
import type { SemKeys } from '../backend/lock-keys';
import type { SemaphoreInfo } from '../backend/lock-info';
import { resolveSemaphore } from './semaphore-options';
import type { SemaphoreOptions } from './semaphore-options';

/**
 * How a framework ties permits to where they are taken (the Nest layer: the request). The
 * engine alone has none.
 */
export interface PermitScope {
  /** The options of a call, with anything the scope adds (such as a signal that aborts when the client goes away). */
  options<O extends { signal?: AbortSignal }>(options: O | undefined): O | undefined;
  /** Resolves a bare permit's handle, noting it in the scope (so that one never released is released once the scope ends). */
  bare<H extends LockHandle | null>(got: Promise<H>): Promise<H>;
  /** A callback run holding permits (withPermit), with what the scope notes of its handle first. */
  held<H extends LockHandle, T>(fn: (handle: H) => T): (handle: H) => T;
}

/**
 * A counting semaphore across processes: at most `limit` permits are held at once, by any
 * number of holders, each taking one or more. Every holder is a lease, like a lock: its own
 * owner token, renewed by the one batched watchdog, a `signal` that aborts when it is lost,
 * an idempotent `release()`, and a fencing token that rises per semaphore. A crashed
 * holder's permits come back when its lease ends; waiters are woken by pub/sub when permits
 * come back or the limit rises, and in any case when the earliest holder's lease would end.
 *
 * The limit lives in Redis beside the holders (`<prefix>{<key>}:sem:limit`): it is stored on
 * first use from `limit`, and changed only by `setLimit`. Lowering it never revokes a
 * permit already held; it only holds new grants back.
 *
 * Not with a quorum (LockConfigError): a count of permits cannot be kept safe by a
 * majority of independent masters without a consensus protocol.
 *
 * @example
 * ```ts
 * const exports = locks.semaphore('exports', { limit: 3 });
 * await exports.withPermit(async (handle) => {
 *   await exporter.run({ signal: handle.signal, fencingToken: await handle.fencingToken() });
 * });
 * ```
 */
export class Semaphore {
  readonly key: string;
  private known: number;
  private readonly keys: SemKeys;

  /** @internal Made by `LockEngine.semaphore` / `LockService.semaphore`. */
  constructor(
    private readonly granter: PermitHost,
    key: string,
    options: SemaphoreOptions,
    prefix: string,
    private readonly scope?: PermitScope,
  ) {
    const resolved = resolveSemaphore(key, options);
    this.key = resolved.key;
    this.known = resolved.limit;
    this.keys = semKeys(prefix, this.key);
  }

  /**
   * The limit this object knows: the one it was made with, or last set by `setLimit`. The
   * limit stored in Redis rules and may differ (another instance's `setLimit`): `inspect()`
   * reads it.
   *
   * @example
   * ```ts
   * logger.log(`exports: at most ${exports.limit} at once`);
   * ```
   */
  get limit(): number {
    return this.known;
  }

  /**
   * Waits up to `waitMs` for `permits` permits (default 1) and returns the holder's handle.
   * Rejects with `LockTimeoutError` when they never came free, `LockAbortedError` when
   * `signal` fired, `LockBackendError` when Redis failed, `LockConfigError` for bad options.
   *
   * @example
   * ```ts
   * const permit = await exports.acquire({ permits: 2, waitMs: 5_000 });
   * try { await exporter.run({ signal: permit.signal }); } finally { await permit.release(); }
   * ```
   */
  async acquire(options?: PermitOptions): Promise<LockHandle> {
    const scope = this.scope;
    return scope ? scope.bare(this.take(scope.options(options))) : this.take(options);
  }

  /** Takes permits as `acquire` does, without noting a bare handle in the scope (withPermit releases its own). */
  private async take(options: PermitOptions | undefined): Promise<LeaseHandle> {
    return this.granter.acquire(resolvePermitAcquire(this.key, options, this.granter.defaults), this.keys, this.known);
  }

  /**
   * One attempt: the handle when the permits were free, `null` when they are not.
   *
   * @example
   * ```ts
   * const permit = await exports.tryAcquire();
   * if (!permit) return 'busy, try later';
   * ```
   */
  async tryAcquire(options?: Omit<PermitOptions, 'waitMs'>): Promise<LockHandle | null> {
    const scope = this.scope;
    return scope ? scope.bare(this.tryTake(scope.options(options))) : this.tryTake(options);
  }

  private async tryTake(options: Omit<PermitOptions, 'waitMs'> | undefined): Promise<LockHandle | null> {
    const req = resolvePermitAcquire(this.key, options, this.granter.defaults);
    return this.granter.tryAcquire(req, this.keys, this.known);
  }

  /**
   * Runs `fn` holding permits and gives them back once it settles, also when it throws; a
   * release error never hides `fn`'s own error. Rejects with `LockLostError` when the
   * permits were lost before `fn` settled.
   *
   * @example
   * ```ts
   * const rows = await exports.withPermit((handle) => exporter.run({ signal: handle.signal }));
   * ```
   */
  async withPermit<T>(fn: (handle: LockHandle) => T | Promise<T>, options?: PermitOptions): Promise<T> {
    checkFunction('withPermit', fn, ' to run holding permits', this.key);
    const scope = this.scope;
    const handle = await this.take(scope ? scope.options(options) : options);
    const run = scope ? scope.held(fn) : fn;
    return this.granter.runLocked(handle, () => run(handle));
  }

  /**
   * Who holds permits now, and how many are free, for dashboards and health checks; never an
   * owner token. `limit` is the stored limit, or this object's number while none is
   * stored yet (never null here).
   *
   * @example
   * ```ts
   * const { used, limit, holders } = await exports.inspect();
   * logger.log(`${used}/${limit} exports running on ${holders.map((h) => h.instanceId).join(', ')}`);
   * ```
   */
  async inspect(): Promise<SemaphoreInfo> {
    let info: SemaphoreInfo;
    try {
      info = await this.granter.inspect(this.keys, this.key);
    } catch (err) {
      throw err instanceof LockError ? err : new LockBackendError(this.key, 'inspect', err);
    }
    if (info.limit !== null) return info;
    const limit = this.known;
    return { ...info, limit, available: Math.max(0, limit - info.used) };
  }

  /**
   * Sets the number of permits, for every instance: raising it wakes the waiters at once;
   * lowering it takes no permit away from a holder, it only holds new grants back until
   * enough holders have left. Resolves the previous limit (0 when none was stored).
   *
   * @example
   * ```ts
   * await exports.setLimit(5); // more capacity: waiting exports start now
   * ```
   */
  async setLimit(limit: number): Promise<number> {
    const checked = checkPermits('limit', limit, MAX_PERMITS, this.key);
    try {
      const previous = await this.granter.setLimit(this.keys, checked);
      this.known = checked;
      return previous;
    } catch (err) {
      throw err instanceof LockError ? err : new LockBackendError(this.key, 'set the limit of', err);
    }
  }
}
