import { LockTimeoutError } from '../../errors';
import type { LeaseHandle } from '../lease/lease';
import type { HeldLocks } from './held-locks';
import type { LeaseGranter } from './lease-granter';
import type { AcquireOptions, RwAcquireOptions } from '../options/options';
import type { PermitOptions } from '../semaphore/permit-options';
import type { PermitGranter } from './permit-granter';

// Every way a key is acquired: the request a decorated call makes (LockRequest), several keys
// at once (acquireAll), and one key (LeasePaths), which the LeaseGranter re-enters or grants.

/**
 * What one decorated call asks of the engine for each of its keys: the kind of lock, the
 * options of each acquire, and for permits the semaphore's limit (each call takes one
 * permit). The layers below pick their path by `kind` and never need to cast.
 *
 * @example
 * ```ts
 * const request: LockRequest = { kind: 'permit', limit: 3, options: { waitMs: 1_000 } };
 * const handles = await engine.acquireAll(['exports'], request, 'wait');
 * ```
 */
export type LockRequest =
  | { readonly kind: 'mutex'; readonly options: AcquireOptions }
  | { readonly kind: 'read'; readonly options: RwAcquireOptions }
  | { readonly kind: 'write'; readonly options: RwAcquireOptions }
  | { readonly kind: 'permit'; readonly limit: number; readonly options: PermitOptions };

/** The same request with its options passed through `edit` (a framework adding its signal). */
export function editOptions(
  request: LockRequest,
  edit: <O extends { signal?: AbortSignal; name?: string }>(options: O) => O,
): LockRequest {
  switch (request.kind) {
    case 'mutex':
      return { kind: 'mutex', options: edit(request.options) };
    case 'read':
    case 'write':
      return { kind: request.kind, options: edit(request.options) };
    case 'permit':
      return { kind: 'permit', limit: request.limit, options: edit(request.options) };
  }
}

/**
 * Acquire options cancelled also by `signal` (a request's, once its client has gone), beside
 * their own. Options that are not an object are left as they are, for the options check to name.
 */
export function addSignal<O extends { signal?: AbortSignal }>(
  options: O | undefined,
  signal: AbortSignal,
): O | undefined {
  const given: unknown = options;
  if (given !== undefined && (typeof given !== 'object' || given === null)) return options;
  const own = options?.signal;
  return { ...options, signal: own ? AbortSignal.any([own, signal]) : signal } as O;
}

/** The same request, cancelled also by `signal` (addSignal). */
export function withSignal(request: LockRequest, signal: AbortSignal): LockRequest {
  return editOptions(request, (o) => addSignal(o, signal) ?? o);
}

/** What taking several locks asks of the engine: its paths that give the internal handle. */
export interface MultiLockHost {
  acquire(key: string, options: AcquireOptions): Promise<LeaseHandle>;
  tryAcquire(key: string, options: AcquireOptions): Promise<LeaseHandle | null>;
  acquireRead(key: string, options: RwAcquireOptions): Promise<LeaseHandle>;
  acquireWrite(key: string, options: RwAcquireOptions): Promise<LeaseHandle>;
  /** One permit of the semaphore `key` whose limit is `limit`; `once`: one attempt, null when busy. */
  permit(key: string, limit: number, options: PermitOptions, once: boolean): Promise<LeaseHandle | null>;
  releaseAll(handles: readonly LeaseHandle[]): Promise<void>;
  /** Reports a call skipped because `key` was busy (event and log line). */
  skipped(key: string, name: string | undefined): Promise<void>;
}

/**
 * Takes several locks one at a time, in the order given (callers sort them, so two calls
 * never wait on each other crosswise). On any failure it releases what it took. With
 * `onBusy: 'skip'` a held key yields `null`; with `'throw'` it fails at once with
 * LockTimeoutError.
 */
export async function acquireAll(
  host: MultiLockHost,
  keys: readonly string[],
  request: LockRequest,
  onBusy: 'wait' | 'throw' | 'skip',
): Promise<LeaseHandle[] | null> {
  const taken: LeaseHandle[] = [];
  try {
    for (const key of keys) {
      const handle = await acquireOne(host, key, request, onBusy);
      if (!handle) {
        await host.releaseAll(taken);
        await host.skipped(key, request.options.name);
        return null;
      }
      taken.push(handle);
    }
    return taken;
  } catch (err) {
    await host.releaseAll(taken);
    throw err;
  }
}

function acquireOne(
  host: MultiLockHost,
  key: string,
  request: LockRequest,
  onBusy: 'wait' | 'throw' | 'skip',
): Promise<LeaseHandle | null> {
  const once = onBusy === 'skip';
  switch (request.kind) {
    case 'mutex': {
      const options = budget(request.options, onBusy);
      return once ? host.tryAcquire(key, options) : host.acquire(key, options);
    }
    case 'permit':
      return host.permit(key, request.limit, budget(request.options, onBusy), once);
    case 'read':
    case 'write': {
      const options = budget(request.options, onBusy);
      const rw = request.kind === 'read' ? host.acquireRead(key, options) : host.acquireWrite(key, options);
      if (!once) return rw;
      return rw.catch((err: unknown) => {
        if (err instanceof LockTimeoutError) return null;
        throw err;
      });
    }
  }
}

/** The no-wait variant of options that cannot change, made once, frozen as they are. */
const NO_WAIT = new WeakMap<object, object>();

/** The options with no wait unless the call waits when busy. */
function budget<O extends { waitMs?: number }>(options: O, onBusy: 'wait' | 'throw' | 'skip'): O {
  if (onBusy === 'wait') return options;
  if (typeof options !== 'object' || options === null || !Object.isFrozen(options)) return { ...options, waitMs: 0 };
  let noWait = NO_WAIT.get(options) as O | undefined;
  if (!noWait) {
    noWait = Object.freeze({ ...options, waitMs: 0 });
    NO_WAIT.set(options, noWait);
  }
  return noWait;
}

/**
 * The engine's acquire paths that give the internal handle, each a single call into the
 * LeaseGranter (locks) or the PermitGranter (permits). The engine's public methods widen them
 * to LockHandle; its own callers (withLock, acquireAll, scheduled jobs) keep the LeaseHandle
 * they hold work with.
 */
export class LeasePaths implements MultiLockHost {
  constructor(
    private readonly granter: LeaseGranter,
    private readonly permits: PermitGranter,
    private readonly held: HeldLocks,
    /** Reports a call skipped because `key` was busy (event and log line). */
    readonly skipped: (key: string, name: string | undefined) => Promise<void>,
  ) {}

  /** Checks a mutex's key and options as an acquire would, asking Redis nothing. */
  checkMutex(key: string, options: AcquireOptions | undefined): void {
    this.granter.resolveMutex(key, options);
  }

  acquire(key: string, options?: AcquireOptions): Promise<LeaseHandle> {
    return this.granter.acquire(key, options);
  }

  tryAcquire(key: string, options?: AcquireOptions): Promise<LeaseHandle | null> {
    return this.granter.tryAcquire(key, options);
  }

  acquireRead(key: string, options?: RwAcquireOptions): Promise<LeaseHandle> {
    return this.granter.acquireRead(key, options);
  }

  acquireWrite(key: string, options?: RwAcquireOptions): Promise<LeaseHandle> {
    return this.granter.acquireWrite(key, options);
  }

  permit(key: string, limit: number, options: PermitOptions, once: boolean): Promise<LeaseHandle | null> {
    return this.permits.take(key, limit, options, once);
  }

  releaseAll(handles: readonly LeaseHandle[]): Promise<void> {
    return this.held.releaseAll(handles);
  }
}
