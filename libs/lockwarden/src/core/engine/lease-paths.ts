import { LeaseHandle } from '../lease/lease';
import type { MultiLockHost } from './acquire-all';
import type { HeldLocks } from './held-locks';
import type { LeaseGranter } from './lease-granter';
import type { AcquireOptions, PermitOptions, RwAcquireOptions } from '../options/options';
import type { PermitGranter } from './permit-granter';
import type { Reentrancy } from './reentrancy';

/**
 * The engine's acquire paths that give the internal handle: reentrancy first, then a new
 * lease from the LeaseGranter. The engine's public methods widen them to LockHandle; its
 * own callers (withLock, acquireAll, scheduled jobs) keep the LeaseHandle they hold work with.
 */
export class LeasePaths implements MultiLockHost {
  constructor(
    private readonly granter: LeaseGranter,
    private readonly reentrancy: Reentrancy,
    private readonly permits: PermitGranter,
    private readonly held: HeldLocks,
    /** Reports a call skipped because `key` was busy (event and log line). */
    readonly skipped: (key: string, name: string | undefined) => Promise<void>,
  ) {}

  /** Checks a mutex's key and options as an acquire would, asking Redis nothing. */
  checkMutex(key: string, options: AcquireOptions | undefined): void {
    this.granter.resolveMutex(key, options);
  }

  async acquire(key: string, options?: AcquireOptions): Promise<LeaseHandle> {
    const req = this.granter.resolveMutex(key, options);
    return this.reentrancy.again(req.key, 'mutex') ?? this.granter.orThrow(req, this.granter.mutex(req));
  }

  async tryAcquire(key: string, options?: AcquireOptions): Promise<LeaseHandle | null> {
    const req = this.granter.resolveMutex(key, options);
    const reentered = this.reentrancy.again(req.key, 'mutex');
    if (reentered) return reentered;
    const got = await this.granter.mutex({ ...req, waitMs: 0 });
    return typeof got === 'number' ? null : got;
  }

  async acquireRead(key: string, options?: RwAcquireOptions): Promise<LeaseHandle> {
    const req = this.granter.resolveRw(key, options);
    const enclosing = this.reentrancy.rw(req.key, 'read');
    if (enclosing instanceof LeaseHandle) return enclosing;
    const preference = options?.writerPreference !== false;
    return this.granter.orThrow(req, this.granter.readWrite(req, 'read', enclosing?.token ?? '', preference));
  }

  async acquireWrite(key: string, options?: RwAcquireOptions): Promise<LeaseHandle> {
    const req = this.granter.resolveRw(key, options);
    const enclosing = this.reentrancy.rw(req.key, 'write');
    if (enclosing instanceof LeaseHandle) return enclosing;
    return this.granter.orThrow(req, this.granter.readWrite(req, 'write', '', true));
  }

  permit(key: string, limit: number, options: PermitOptions, once: boolean): Promise<LeaseHandle | null> {
    return this.permits.take(key, limit, options, once);
  }

  releaseAll(handles: readonly LeaseHandle[]): Promise<void> {
    return this.held.releaseAll(handles);
  }
}
