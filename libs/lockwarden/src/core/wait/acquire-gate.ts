import { LockAbortedError, LockBackendError } from '../../errors';
import { LATE } from './busy-wait';
import { afterReads } from '../redis/after-reads';
import type { OutageWatcher } from './outage-sweep';

/**
 * What may cut one acquire short: the caller's AbortSignal, the engine
 * shutting down (`abort()`), Redis found unreachable (`fail()`), or Redis not
 * answering. A listener is added only when the caller gave a signal.
 */
export class AcquireGate implements OutageWatcher {
  readonly action = 'acquire';
  private reason: unknown;
  private aborted = false;
  /** Why Redis cannot be reached, once it was found so: the acquire fails with it. */
  private failure: LockBackendError | undefined;
  private onAbort: (() => void) | undefined;

  constructor(
    readonly key: string,
    private readonly signal: AbortSignal | undefined,
  ) {
    if (signal?.aborted) this.abort(signal.reason);
    else signal?.addEventListener('abort', this.listener, { once: true });
  }

  private readonly listener = (): void => {
    this.abort(this.signal?.reason);
  };

  abort(reason: unknown): void {
    if (this.aborted || this.failure) return;
    this.aborted = true;
    this.reason = reason;
    this.onAbort?.();
  }

  /** Ends the wait with `err` (Redis is unreachable), as a signal would with LockAbortedError. */
  fail(err: LockBackendError): void {
    if (this.aborted || this.failure) return;
    this.failure = err;
    this.onAbort?.();
  }

  /** Throws LockAbortedError once any signal has fired, or the failure once Redis was found unreachable. */
  check(): void {
    if (this.aborted || this.failure) throw this.closedWith();
  }

  private closedWith(): Error {
    return this.failure ?? new LockAbortedError(this.key, this.reason);
  }

  /** Calls `fn` when a signal fires or Redis is found unreachable (replacing any earlier callback). */
  whenAborted(fn: (() => void) | undefined): void {
    this.onAbort = fn;
  }

  /**
   * The first attempt: settles with `work`, unless a signal fires first (LockAbortedError), Redis
   * is found unreachable (the failure), or `timeoutMs` passes (LockBackendError, whose cause is
   * what `down` knows of a Redis known to be unreachable, else "did not answer within `saidMs`",
   * connecting included when `cold`). The caller still owns `work`'s eventual result and must
   * clean up after it.
   */
  race<T>(
    work: Promise<T>,
    timeoutMs: number,
    down: { cause(): Error | undefined },
    cold: boolean,
    saidMs: number,
  ): Promise<T> {
    return this.bounded(work, timeoutMs, (_resolve, reject) => {
      const note = cold ? ', connecting included (the engine had not connected yet)' : '';
      const cause = down.cause() ?? new Error(`Redis did not answer within ${saidMs} ms${note}`);
      reject(new LockBackendError(this.key, 'acquire', cause));
    });
  }

  /**
   * Settles with `work`, unless a signal fires first (LockAbortedError), Redis is found
   * unreachable (the failure), or `timeoutMs` passes (LATE): an await after Redis said "busy",
   * which the wait budget bounds.
   */
  orLate<T>(work: Promise<T>, timeoutMs: number): Promise<T | typeof LATE> {
    return this.bounded<T | typeof LATE>(work, timeoutMs, (resolve) => resolve(LATE));
  }

  private bounded<T>(
    work: Promise<T>,
    timeoutMs: number,
    expired: (resolve: (value: T) => void, reject: (err: unknown) => void) => void,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      // Whichever ends it first: later ones must not clear the callback a later wait set.
      let settled = false;
      const end = (): boolean => {
        if (settled) return false;
        settled = true;
        clearTimeout(timer);
        this.whenAborted(undefined);
        return true;
      };
      const timer = setTimeout(
        // An answer that came while this process stalled is read first (afterReads).
        afterReads(() => end() && expired(resolve, reject)),
        // Node fires a longer delay at once: a budget this long is a wait without end.
        Math.min(Math.max(timeoutMs, 0), 2 ** 31 - 1),
      );
      // The pending Redis call keeps the process alive while it matters; this timer never should.
      timer.unref();
      this.whenAborted(() => end() && reject(this.closedWith()));
      work.then(
        (value) => end() && resolve(value),
        (err: unknown) => end() && reject(err),
      );
    });
  }

  dispose(): void {
    this.onAbort = undefined;
    this.signal?.removeEventListener('abort', this.listener);
  }
}
