import { AsyncLocalStorage } from 'node:async_hooks';
import type { Lease, LeaseHandle } from './lease';
import type { LeaseKind } from '../backend/lock-store';

/** One lock entered by a `withLock` callback or decorated method, linked to the locks around it. */
export interface LockFrame {
  readonly lease: Lease;
  readonly handle: LeaseHandle;
  readonly parent: LockFrame | undefined;
}

/**
 * Reentrancy by ancestry: a flow may re-enter a lock that a callback enclosing
 * it holds. Frames live in AsyncLocalStorage, so sibling flows (two calls
 * under one Promise.all) never see each other's locks, and a bare acquire()
 * outside any callback never re-enters anything.
 */
export class LockContext {
  private readonly storage = new AsyncLocalStorage<LockFrame>();

  run<T>(lease: Lease, handle: LeaseHandle, fn: () => T): T {
    return this.storage.run({ lease, handle, parent: this.storage.getStore() }, fn);
  }

  /** The innermost enclosing frame of `kind` for `key` whose lock has not been released. */
  find(key: string, kind: LeaseKind): LockFrame | undefined {
    for (let f = this.storage.getStore(); f; f = f.parent) {
      if (f.lease.key === key && f.lease.kind === kind && f.lease.state !== 'released') return f;
    }
    return undefined;
  }

  /** The innermost enclosing frame (for `key`, when given) whose lock has not been released. */
  current(key?: string): LockFrame | undefined {
    for (let f = this.storage.getStore(); f; f = f.parent) {
      f.lease.check();
      if (f.lease.state !== 'released' && (key === undefined || f.lease.key === key)) return f;
    }
    return undefined;
  }
}
