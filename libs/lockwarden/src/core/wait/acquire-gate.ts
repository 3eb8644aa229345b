import { LockAbortedError, LockBackendError } from '../../errors';

/**
 * What may cut one acquire short: the caller's AbortSignal, the engine
 * shutting down (`abort()`), or Redis not answering. A listener is added only
 * when the caller gave a signal.
 */
export class AcquireGate {
  private reason: unknown;
  private aborted = false;
  private onAbort: (() => void) | undefined;

  constructor(
    private readonly key: string,
    private readonly signal: AbortSignal | undefined,
  ) {
    if (signal?.aborted) this.abort(signal.reason);
    else signal?.addEventListener('abort', this.listener, { once: true });
  }

  private readonly listener = (): void => {
    this.abort(this.signal?.reason);
  };

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.onAbort?.();
  }

  /** Throws LockAbortedError once any signal has fired. */
  check(): void {
    if (this.aborted) throw new LockAbortedError(this.key, this.reason);
  }

  /** Calls `fn` when a signal fires (replacing any earlier callback). */
  whenAborted(fn: (() => void) | undefined): void {
    this.onAbort = fn;
  }

  /**
   * Settles with `work`, unless a signal fires first (LockAbortedError) or
   * `timeoutMs` passes (LockBackendError, whose cause is what `down` knows of a
   * connection that is down, since "no answer" would hide a refused connection).
   * The caller still owns `work`'s eventual result and must clean up after it.
   */
  race<T>(work: Promise<T>, timeoutMs: number, action: string, down?: () => Error | undefined): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => {
          this.whenAborted(undefined);
          const ms = Math.round(timeoutMs);
          const cause = down?.() ?? new Error(`Redis did not answer within ${ms} ms`);
          reject(new LockBackendError(this.key, action, cause));
        },
        // Node fires a longer delay at once: a budget this long is a wait without end.
        Math.min(timeoutMs, 2 ** 31 - 1),
      );
      // The pending Redis call keeps the process alive while it matters; this timer never should.
      timer.unref();
      this.whenAborted(() => {
        clearTimeout(timer);
        reject(new LockAbortedError(this.key, this.reason));
      });
      work.then(
        (value) => {
          clearTimeout(timer);
          this.whenAborted(undefined);
          resolve(value);
        },
        (err: unknown) => {
          clearTimeout(timer);
          this.whenAborted(undefined);
          reject(err);
        },
      );
    });
  }

  dispose(): void {
    this.onAbort = undefined;
    this.signal?.removeEventListener('abort', this.listener);
  }
}
