import { AsyncLocalStorage } from 'node:async_hooks';
import type { LockHandle } from '../core/lock-handle';

/**
 * One intercepted handler call. The decorated handler claims it and leaves its
 * locks here, so the interceptor can hold them until the response is done
 * (an Observable or stream outlives the handler's own return).
 */
export interface RequestLockScope {
  /** The handler the interceptor wraps; only its own call claims the scope. */
  readonly handler: unknown;
  claimed: boolean;
  handles: LockHandle[] | undefined;
  /** Set once the request is over (response sent or client gone): late locks are released at once. */
  ended: boolean;
}

export const requestLockScopes = new AsyncLocalStorage<RequestLockScope>();
