import { LockLostError } from '../../errors';
import type { LockError } from '../../errors';
import type { LockHandle } from './lock-handle';
import type { HoldTrace } from '../observe/telemetry';
import type { MutexKeys, RwKeys, SemKeys } from '../backend/lock-keys';
import type { LockKind } from '../backend/lock-store';

export type LeaseState = 'held' | 'released' | 'lost';

/**
 * The safety margin of a lease this long, with the engine's `safetyMarginMs` when set: never
 * more than a third of it, so renewal always gets a chance.
 */
export function safetyMarginFor(leaseMs: number, configured: number | undefined): number {
  const margin = configured ?? Math.min(2_000, Math.floor(leaseMs / 5));
  return Math.min(margin, Math.floor(leaseMs / 3));
}

/** Which lock a lease is of: its kind, with the Redis keys of that kind. */
export type LeasedLock =
  | { readonly kind: 'mutex'; readonly keys: MutexKeys }
  | { readonly kind: 'read' | 'write'; readonly keys: RwKeys }
  | { readonly kind: 'permit'; readonly keys: SemKeys };

/** What a lease needs from the engine that granted it. */
export interface LeaseHost {
  releaseLease(lease: Lease): Promise<boolean>;
  extendLease(lease: Lease, ms: number | undefined): Promise<void>;
  /** Mints the token of a lease granted without one, while Redis still has it as the holder. */
  mintFence(lease: Lease): Promise<number>;
}

/**
 * One acquisition as the engine tracks it: a secret owner token, the lease
 * timing the watchdog works from, and the handles that share it (reentrancy).
 * Times are `performance.now()` milliseconds, never wall-clock.
 */
export class Lease {
  state: LeaseState = 'held';
  handles = 1;
  /**
   * Made on first use of `signal`: most locks are taken and released without anyone
   * looking at their signal, and an AbortController per acquisition is a cost on the
   * uncontended path. An abort before then is kept in `abortReason` and replayed.
   */
  private controller: AbortController | undefined;
  private abortReason: unknown;
  /** When Redis will drop the key at the earliest, counted from before the request that set it. */
  expiresAt: number;
  /** When the watchdog wants to renew next (Infinity for a fixed lease). */
  nextRenewAt: number;
  renewing = false;
  /** No renewal reaches past this (maxHoldMs); Infinity when uncapped. */
  maxHoldUntil = Infinity;
  /** How many releases in a row handed these permits (sem-release.lua) or this mutex (hand-off-here.lua) off within this process. */
  handOffs = 0;
  /** A mutex whose release may hand it off to a waiter of this process (Attempt.mutexHandOff). */
  handsOffHere = false;
  /** Since when the mutex has been handed off within this process in a row; undefined when it came from Redis. */
  handOffsSince: number | undefined;
  /** It was waited for, or handed off: others likely wait too (see LoopResult.contended). */
  contended = false;
  /** Set once maxHoldMs shortened or skipped a renewal: the lease now ends by the cap. */
  capped = false;
  /** A release before this only shortens the lease to it (lockAtLeastMs); 0 when unset. */
  keepUntil = 0;
  /** Why the lease was lost, once it was. */
  lostError: LockLostError | undefined;
  /** The low-cardinality name metrics label it with. */
  name = '';
  /** Where the lease counts from (performance.now()): no later than the grant (the granted attempt's sending). */
  readonly acquiredAt: number;
  /** When the holder had the grant in hand (performance.now()): hold times count from here. */
  readonly heldSince = performance.now();
  /** Ends its `lockwarden.hold` span once it is released or lost; undefined when not traced. */
  trace: HoldTrace | undefined;
  readonly kind: LockKind;
  readonly keys: MutexKeys | RwKeys | SemKeys;

  constructor(
    readonly host: LeaseHost,
    /** The kind and keys together, so that a release picks the store call without a cast. */
    readonly lock: LeasedLock,
    readonly key: string,
    readonly ownerToken: string,
    /**
     * The fencing token, once minted: at the grant where a script ran anyway, else on the
     * first `fencingToken()` read (an uncontended mutex grant takes none).
     */
    public mintedToken: number | undefined,
    public leaseMs: number,
    readonly renew: boolean,
    /** How long before the lease ends an unrenewed holder is told it is lost (shorter while a hand-off lease is short). */
    public safetyMarginMs: number,
    startedAt: number,
  ) {
    this.kind = lock.kind;
    this.keys = lock.keys;
    this.acquiredAt = startedAt;
    this.expiresAt = startedAt + leaseMs;
    this.nextRenewAt = renew ? startedAt + leaseMs / 3 : Infinity;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      timeAwareSignal(this.controller.signal, () => this.check());
      if (this.abortReason !== undefined) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  /** Whether the signal has aborted, without making one. */
  private get aborted(): boolean {
    return this.controller ? (abortedOf.call(this.controller.signal) as boolean) : this.abortReason !== undefined;
  }

  private abort(reason: unknown): void {
    if (this.controller) this.controller.abort(reason);
    else this.abortReason = reason;
  }

  /**
   * Set by the watchdog while it tracks the lease: called when a read finds the lease past
   * its abort time before the watchdog's timer has run (after a pause, say).
   */
  overdue: ((lease: Lease) => void) | undefined;

  /** Whether the watchdog tracks the lease (it sets `overdue` exactly while it does). */
  get tracked(): boolean {
    return this.overdue !== undefined;
  }

  /**
   * Makes the lease read as lost at once, synchronously, when its locally measured abort
   * time has passed: a process resuming from a pause may run a callback before any timer.
   */
  check(): void {
    if (this.state === 'held' && this.overdue && performance.now() >= this.abortAt) this.overdue(this);
  }

  /** The moment to give up on the lease: its expiry (or its maxHoldMs cap) minus the safety margin. */
  get abortAt(): number {
    return Math.min(this.expiresAt, this.maxHoldUntil) - this.safetyMarginMs;
  }

  /** The lease a renewal sent at `now` asks for: never past the maxHoldMs cap. */
  renewalMs(now: number): number {
    // A fixed lease (renew: false) renews only to the end it asked for, from its grant. Not
    // (now + leaseMs) - now: in floating point that is now and then 1 ms short: "capped".
    const left = this.renew ? this.leaseMs : this.acquiredAt + this.leaseMs - now;
    return Math.floor(Math.min(left, this.maxHoldUntil - now));
  }

  /** Due for its one renewal: a fixed lease (renew: false) still on a short hand-off lease. */
  get extendsOnce(): boolean {
    return !this.renew && this.shortLeaseMs !== undefined;
  }

  /** Records a renewal (or extend) sent at `sentAt` that set the server lease to `grantedMs`. */
  confirm(sentAt: number, grantedMs: number): void {
    this.expiresAt = sentAt + grantedMs;
    this.nextRenewAt = this.renew ? sentAt + this.leaseMs / 3 : Infinity;
    if (this.fullMarginMs !== undefined) {
      this.safetyMarginMs = this.fullMarginMs;
      this.fullMarginMs = undefined;
      this.shortLeaseMs = undefined;
    }
  }

  /** The margin of the full lease, kept while a short hand-off lease uses its own. */
  private fullMarginMs: number | undefined;
  /** The short hand-off lease the server holds until the first renewal; undefined after it. */
  private shortLeaseMs: number | undefined;

  /** The lease the server holds now: the hand-off lease until the first renewal, then the lease. */
  get currentLeaseMs(): number {
    return this.shortLeaseMs ?? this.leaseMs;
  }

  /**
   * A lease handed off by a release, used without a call to confirm it: the server holds it
   * for `grantedMs` (short, so that a waiter that died before using it costs little), so it
   * ends sooner and is due for renewal at once (HeldLocks.add sends it before the holder's
   * work runs): to the full lease, or, for a fixed lease, to the end it was asked for. Until
   * then, `marginMs` is its safety margin.
   */
  startShort(grantedMs: number, marginMs: number): void {
    this.expiresAt = this.acquiredAt + grantedMs;
    this.nextRenewAt = this.acquiredAt;
    this.shortLeaseMs = grantedMs;
    this.fullMarginMs = this.safetyMarginMs;
    this.safetyMarginMs = marginMs;
  }

  /** The mint in flight, shared by concurrent first reads so that one script call serves them all. */
  private minting: Promise<number> | undefined;

  /**
   * The fencing token: at once when minted, else minted now by one round trip, only while
   * Redis still has this lease as the holder. Rejects with LockLostError once the lease is
   * lost or released: a holder without a live lock gets no token.
   */
  fencingToken(): Promise<number> {
    this.check();
    if (this.state !== 'held') {
      return Promise.reject(this.lostError ?? new LockLostError(this.key, `it was already ${this.state}`));
    }
    if (this.mintedToken !== undefined) return Promise.resolve(this.mintedToken);
    this.minting ??= this.host.mintFence(this).finally(() => (this.minting = undefined));
    return this.minting;
  }

  /** Asks the holder to stop (shutdown, client gone): aborts the signal but keeps the lease. */
  interrupt(reason: LockError): void {
    if (this.state === 'held' && !this.aborted) this.abort(reason);
  }

  /** Marks the lease lost and aborts its signal. Returns false if it had already ended. */
  lose(reason: string, cause?: unknown): boolean {
    if (this.state !== 'held') return false;
    this.end(reason, cause);
    return true;
  }

  /**
   * Its release found the key no longer its own (evicted, deleted, flushed, lost in a
   * failover): the lease ended as lost, not released, and its signal aborts.
   */
  lostAtRelease(reason: string): void {
    if (this.state === 'released') this.end(reason, undefined);
  }

  private end(reason: string, cause: unknown): void {
    this.state = 'lost';
    this.lostError = new LockLostError(this.key, reason, cause === undefined ? undefined : { cause });
    this.trace?.lost(reason);
    // An interrupted holder's signal already fired; the loss still changes what withLock reports.
    if (!this.aborted) this.abort(this.lostError);
  }
}

/** The public face of one claim on a lease; a reentrant acquire gets a handle of its own. */
export class LeaseHandle implements LockHandle {
  private released = false;

  constructor(readonly lease: Lease) {}

  get key(): string {
    return this.lease.key;
  }

  fencingToken(): Promise<number> {
    return this.released ? alreadyReleased(this.lease.key) : this.lease.fencingToken();
  }

  get signal(): AbortSignal {
    this.lease.check();
    return this.lease.signal;
  }

  get lostError(): LockLostError | undefined {
    this.lease.check();
    return this.lease.lostError;
  }

  isHeld(): boolean {
    this.lease.check();
    return !this.released && this.lease.state === 'held';
  }

  extend(ms?: number): Promise<void> {
    return this.released ? alreadyReleased(this.lease.key) : this.lease.host.extendLease(this.lease, ms);
  }

  release(): Promise<boolean> {
    return this.markReleased() ? this.lease.host.releaseLease(this.lease) : Promise.resolve(false);
  }

  /** Marks this handle released; false when it was already. Its holder then releases its claim. */
  markReleased(): boolean {
    if (this.released) return false;
    this.released = true;
    return true;
  }
}

function alreadyReleased(key: string): Promise<never> {
  return Promise.reject(new LockLostError(key, 'this handle was already released'));
}

const abortedOf = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted')!.get!;
const throwIfAbortedOf = AbortSignal.prototype.throwIfAborted;

/**
 * Makes `aborted` and `throwIfAborted()` of `signal` run `check` first (a lease's deadline
 * check), so a holder that cached the signal still reads it as aborted the moment its lease
 * is overdue, even before the watchdog's next round. Used by leases and leadership terms.
 */
export function timeAwareSignal<S extends AbortSignal>(signal: S, check: () => unknown): S {
  Object.defineProperty(signal, 'aborted', {
    configurable: true,
    get(this: AbortSignal): boolean {
      check();
      return abortedOf.call(this) as boolean;
    },
  });
  Object.defineProperty(signal, 'throwIfAborted', {
    configurable: true,
    value(this: AbortSignal): void {
      check();
      throwIfAbortedOf.call(this);
    },
  });
  return signal;
}
