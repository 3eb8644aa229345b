import { AsyncLocalStorage } from 'node:async_hooks';
import type { LockHandle } from '../core/lock-handle';

/**
 * One intercepted request (or decorated handler call). Every lock granted
 * while it runs is tracked, so locks the code forgot to release are released
 * when the request ends. A lock-decorated handler claims the scope and leaves
 * its locks here, so they last until the response is finished.
 */
export interface RequestLockScope {
  /** The decorated handler the interceptor wraps, if any; only its own call claims the scope. */
  readonly handler: unknown;
  claimed: boolean;
  /** The decorated handler's own locks, held until the response ends. */
  handles: LockHandle[] | undefined;
  /** Every lock granted during the request. */
  readonly tracked: Set<LockHandle>;
  /** Fires when the client goes away, cancelling the handler's pending acquire. */
  readonly abort: AbortController;
  /** Set once the request is over: locks granted later are left alone (background work). */
  ended: boolean;
}

export const requestLockScopes = new AsyncLocalStorage<RequestLockScope>();

export function newRequestLockScope(handler: unknown): RequestLockScope {
  return {
    handler,
    claimed: false,
    handles: undefined,
    tracked: new Set(),
    abort: new AbortController(),
    ended: false,
  };
}
