import { LockAbortedError, LockTimeoutError } from '../../errors';
import type { LeaseHandle } from '../lease/lease';
import type { LockHandle } from '../lease/lock-handle';
import type { HeldLocks } from './held-locks';
import type { MethodCall } from './method-call';
import type { LeaseGranter } from './lease-granter';
import type { LockedSpec } from './locked-spec';
import type { PermitSpec } from '../semaphore/permit-spec';
import type { PermitGranter } from './permit-granter';

// One call of a lock-decorated method, from its keys to its release: the engine's one door for
// the decorators (LockEngine.lockAndRun). It takes the keys itself, one granter call each, and
// hands the method to the held locks to run: nothing in between only passes a call on.

/**
 * What one decorated call asks of the engine for each of its keys: the kind of lock, the
 * options of each acquire, and for permits the semaphore's limit (each call takes one
 * permit). The layers below pick their path by `kind` and never need to cast.
 *
 * @example
 * ```ts
 * const spec: LockSpec = { kind: 'permit', limit: 3, options: { waitMs: 1_000 } };
 * const outcome = await engine.lockAndRun(['exports'], spec, { method, self, args, onBusy: 'wait' });
 * ```
 */
export type LockSpec = LockedSpec | PermitSpec;

/**
 * What a decorated method does when its lock is held by someone else: `'wait'` waits up to
 * `waitMs`, `'throw'` rejects at once with `LockTimeoutError`, `'skip'` resolves `undefined`
 * without running the method.
 *
 * @example
 * ```ts
 * const onBusy: OnBusy = 'skip'; // another instance is on it: do nothing
 * ```
 */
export type OnBusy = 'wait' | 'throw' | 'skip';

/**
 * One call of a locked method, as a framework hands it to `LockEngine.lockAndRun`: the method
 * as written with its `this` and arguments (the engine calls it itself), and how the call
 * belongs to a request.
 *
 * @example
 * ```ts
 * const call: LockedCall = { method: Reports.prototype.build, self: reports, args: [id], onBusy: 'skip' };
 * ```
 */
export interface LockedCall extends MethodCall {
  /** The method as written; the engine calls it with `self` as `this` and `args`. */
  readonly method: (...args: never[]) => unknown;
  readonly self: unknown;
  readonly args: readonly unknown[];
  /**
   * The index of the argument that receives the AbortSignal of the locks the call holds (a
   * method's `@LockSignal()` parameter): the holder's signal, or with several keys one that
   * aborts when any of them is lost.
   */
  readonly signalArg?: number;
  /** A busy key: wait for it (within each acquire's `waitMs`), fail at once (`'throw'`), or skip the call. */
  readonly onBusy: OnBusy;
  /**
   * The request's signal: it cancels a pending acquire, and once the locks are granted but the
   * method has not started, it releases them and the call does not run.
   */
  readonly signal?: AbortSignal;
  /** Each handle, pushed as it is granted: how a request learns of the locks taken for it. */
  readonly granted?: LockHandle[];
  /** The rest of the work once the method settled (a response still streaming): released after it. */
  readonly until?: PromiseLike<unknown>;
  /**
   * For a result that runs when subscribed (an Observable: an object with a `subscribe`
   * method), asked once the method settled: the value to hand back, and when its work is over.
   * The locks are released then.
   */
  readonly lateWork?: (value: unknown) => { readonly value: unknown; readonly over: PromiseLike<unknown> };
}

/**
 * How a locked call ended: it ran (and gave `value`), or it did not run, because a key was busy
 * and the call skips (no `error`) or because its locks were not granted (`error`: a
 * LockTimeoutError, LockAbortedError, LockBackendError...). An error the method itself throws
 * rejects the call instead, so a framework never mistakes it for a busy lock.
 */
export type LockedOutcome =
  { readonly ran: true; readonly value: unknown } | { readonly ran: false; readonly error?: unknown };

/** The same spec with its options passed through `edit` (a framework adding its signal). */
export function editOptions(
  spec: LockSpec,
  edit: <O extends { signal?: AbortSignal; name?: string }>(options: O) => O,
): LockSpec {
  switch (spec.kind) {
    case 'mutex':
      return { kind: 'mutex', options: edit(spec.options) };
    case 'read':
    case 'write':
      return { kind: spec.kind, options: edit(spec.options) };
    case 'permit':
      return { kind: 'permit', limit: spec.limit, options: edit(spec.options) };
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

/** Reports a call skipped because `key` was busy (event and log line). */
export type SkipReport = (key: string, name: string | undefined) => Promise<void>;

/**
 * The decorated calls of one engine. Keys are taken one at a time, in the order given (callers
 * sort them, so two calls never wait on each other crosswise); on any failure what was taken
 * is released.
 */
export class LockedCalls {
  constructor(
    private readonly granter: LeaseGranter,
    private readonly permits: PermitGranter,
    private readonly held: HeldLocks,
    private readonly skipped: SkipReport,
  ) {}

  /** Takes the locks `spec` asks for on `keys`, runs the method holding them, then releases them. */
  readonly run = async (keys: readonly string[], spec: LockSpec, call: LockedCall): Promise<LockedOutcome> => {
    const signal = call.signal;
    const asked = signal ? editOptions(spec, (o) => addSignal(o, signal) ?? o) : spec;
    let handles: LeaseHandle[] | string;
    try {
      handles = await this.acquireAll(keys, asked, call);
    } catch (error) {
      return { ran: false, error };
    }
    if (typeof handles === 'string') {
      await this.skipped(handles, spec.options.name);
      return { ran: false };
    }
    if (signal?.aborted) {
      await this.held.releaseAll(handles);
      const why = signal.reason instanceof Error ? signal.reason.message : String(signal.reason ?? 'aborted');
      return { ran: false, error: new LockAbortedError(keys[0], `${why} before the method could start`) };
    }
    return { ran: true, value: await this.held.runMethod(handles, call) };
  };

  /** The handles, or the first key found busy when the call skips (what it took is released). */
  private async acquireAll(keys: readonly string[], spec: LockSpec, call: LockedCall): Promise<LeaseHandle[] | string> {
    const taken: LeaseHandle[] = [];
    try {
      for (const key of keys) {
        const handle = await this.acquireOne(key, spec, call.onBusy);
        if (!handle) {
          await this.held.releaseAll(taken);
          return key;
        }
        taken.push(handle);
        call.granted?.push(handle);
      }
      return taken;
    } catch (err) {
      await this.held.releaseAll(taken);
      throw err;
    }
  }

  private acquireOne(key: string, spec: LockSpec, onBusy: LockedCall['onBusy']): Promise<LeaseHandle | null> {
    const once = onBusy === 'skip';
    switch (spec.kind) {
      case 'mutex': {
        const options = budget(spec.options, onBusy);
        return once ? this.granter.tryAcquire(key, options) : this.granter.acquire(key, options);
      }
      case 'permit':
        return this.permits.take(key, spec.limit, budget(spec.options, onBusy), once);
      case 'read':
      case 'write': {
        const options = budget(spec.options, onBusy);
        const rw =
          spec.kind === 'read' ? this.granter.acquireRead(key, options) : this.granter.acquireWrite(key, options);
        if (!once) return rw;
        return rw.catch((err: unknown) => {
          if (err instanceof LockTimeoutError) return null;
          throw err;
        });
      }
    }
  }
}

/** The no-wait variant of options that cannot change, made once, frozen as they are. */
const NO_WAIT = new WeakMap<object, object>();

/** The options with no wait unless the call waits when busy. */
function budget<O extends { waitMs?: number }>(options: O, onBusy: LockedCall['onBusy']): O {
  if (onBusy === 'wait') return options;
  if (typeof options !== 'object' || options === null || !Object.isFrozen(options)) return { ...options, waitMs: 0 };
  let noWait = NO_WAIT.get(options) as O | undefined;
  if (!noWait) {
    noWait = Object.freeze({ ...options, waitMs: 0 });
    NO_WAIT.set(options, noWait);
  }
  return noWait;
}
