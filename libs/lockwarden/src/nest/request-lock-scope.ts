import { AsyncLocalStorage } from 'node:async_hooks';
import { setMaxListeners } from 'node:events';
import { addSignal } from '../core';
import type { LockHandle } from '../core';

const scopes = new AsyncLocalStorage<RequestLockScope>();

/**
 * What the lock layer knows of one intercepted request (or RPC / WebSocket
 * call). `LockInterceptor` creates it and is its only owner; the rest only
 * read it or report into it.
 *
 * It never releases anything by itself. It tells apart:
 * - the decorated handler's own locks, released by the engine once the
 *   handler's work has settled and the request is over (`over`);
 * - bare `acquire()` handles taken during the request, the only locks a
 *   request may forget, and so the only ones released for it, after `over`;
 * - every lock granted during the request, whose signal aborts (and whose
 *   pending acquires are cancelled) when the client goes away.
 */
export class RequestLockScope {
  private claimed = false;
  private readonly controller = new AbortController();
  /** The decorated handler's own locks, pushed by the engine as it grants them (LockedCall.granted). */
  readonly own: LockHandle[] = [];
  /** Every other lock granted during the request, pushed as it is granted. */
  readonly granted: LockHandle[] = [];
  private readonly bareHandles = new Set<LockHandle>();
  private handlerSettled = false;
  private responseClosed = false;
  private markOver!: () => void;
  /** Resolves once the handler's work has settled and the response is over. */
  readonly over = new Promise<void>((resolve) => (this.markOver = resolve));

  /**
   * @param handler the lock-decorated handler the interceptor wraps, if any: only its own call claims the scope.
   * @param interrupt asks the holders of handles to stop (LockEngine.interrupt), when the client goes away.
   */
  constructor(
    private readonly handler: unknown,
    private readonly interrupt: (handles: readonly LockHandle[], reason: string) => void,
  ) {
    // Every acquire the request makes listens on its signal while it waits: a request that
    // takes many locks at once is no listener leak, and Node must not warn that it is.
    setMaxListeners(0, this.controller.signal);
  }

  /** The scope of the request the caller runs in, while that request is not over. */
  static current(): RequestLockScope | undefined {
    const scope = scopes.getStore();
    return scope && !scope.isOver ? scope : undefined;
  }

  run<T>(fn: () => T): T {
    return scopes.run(this, fn);
  }

  /** True once, for the call of the decorated handler itself (not for methods it calls). */
  claim(wrapper: unknown): boolean {
    if (this.claimed || wrapper !== this.handler) return false;
    this.claimed = true;
    return true;
  }

  /** Aborts when the client went away: cancels the request's pending acquires. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get isOver(): boolean {
    return this.handlerSettled && this.responseClosed;
  }

  get clientGone(): boolean {
    return this.controller.signal.aborted;
  }

  /**
   * Notes a lock granted during the request, outside the engine's decorated path (LockService's
   * acquires and callbacks): its signal aborts if the client goes away, at once if it has.
   */
  grantedNow(handle: LockHandle): void {
    this.granted.push(handle);
    if (this.clientGone) this.interrupt([handle], reasonOf(this.controller.signal));
  }

  tookBare(handle: LockHandle): void {
    this.bareHandles.add(handle);
  }

  /** Bare handles still held: the ones the request's code forgot to release. */
  forgotten(): LockHandle[] {
    return [...this.bareHandles].filter((h) => h.isHeld());
  }

  /** The first of the handler's own locks that was lost, if any. */
  firstLoss(): LockHandle | undefined {
    return this.own.find((h) => h.lostError !== undefined);
  }

  /** The handler's Observable completed, errored or was unsubscribed. */
  settleHandler(): void {
    this.handlerSettled = true;
    this.checkOver();
  }

  /** The response was fully sent or its connection closed; `clientGone` when it closed early. */
  closeResponse(clientGone: boolean, reason?: Error): void {
    if (clientGone && !this.controller.signal.aborted) {
      this.controller.abort(reason);
      this.interrupt([...this.own, ...this.granted], reasonOf(this.controller.signal));
    }
    this.responseClosed = true;
    this.checkOver();
  }

  private checkOver(): void {
    if (this.isOver) this.markOver();
  }
}

/** The request's cancellation added to an acquire's own signal, when it runs inside a live request. */
export function withRequestSignal<O extends { signal?: AbortSignal }>(options: O | undefined): O | undefined {
  const scope = RequestLockScope.current();
  return scope ? addSignal(options, scope.signal) : options;
}

/**
 * A handle from a bare acquire, taken inside a request, is the request's to
 * release: if its code forgets, the interceptor releases it once the request is over.
 */
export async function bare<H extends LockHandle | null>(got: Promise<H>): Promise<H> {
  const scope = RequestLockScope.current();
  const handle = await got;
  if (handle && scope) {
    scope.grantedNow(handle);
    scope.tookBare(handle);
  }
  return handle;
}

/**
 * A callback run holding a lock (withLock and its kin), its lock noted as the request's before
 * it runs: its signal aborts if the client goes away.
 */
export function inRequest<H extends LockHandle, T>(fn: (handle: H) => T): (handle: H) => T {
  const scope = RequestLockScope.current();
  if (!scope) return fn;
  return (handle) => {
    scope.grantedNow(handle);
    return fn(handle);
  };
}

function reasonOf(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason.message : String(reason);
}
