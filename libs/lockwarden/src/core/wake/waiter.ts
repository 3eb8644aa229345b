import type { MutexHandOff, PermitHandOff } from '../backend/lock-store';
import type { GrantNotice } from '../backend/wire';

/**
 * Why a parked waiter woke: a release message (`wake`), a hand-off told on its inbox
 * (`handOff`), permits handed to it by a release in this process (`handOffHere`), its timer,
 * or an interrupt.
 */
type ParkResult = 'wake' | 'handOff' | 'handOffHere' | 'timer' | 'interrupt';

/**
 * One waiting acquire. A wake-up that arrives while its attempt is still in
 * flight is remembered, so "attempt failed" followed by "start waiting" never
 * misses a release that landed in between.
 */
export class Waiter {
  pendingWake = false;
  /** A release handed this waiter the lock, told on its inbox (`grantNotice` says how). */
  toldOfHandOff = false;
  /** What the hand-off message said: the fencing token, the lease set, and the attempt it counts from. */
  grantNotice: GrantNotice | undefined;
  /** The longest a release hands another waiter the lock for before it must confirm it. */
  handoffMs = Infinity;
  /** Semaphores: what a release of this process needs to hand its permits off to this waiter. */
  handOff: PermitHandOff | undefined;
  /** Mutexes: what a release of this process needs to hand the lock off to this waiter (hand-off-here.lua). */
  mutexHandOff: MutexHandOff | undefined;
  /**
   * Semaphores: this engine's waiters for the semaphore share one place on the server
   * (WakeBus.mayTakePlace); the others are served by hand-offs within the process, and take
   * the place in turn.
   */
  sharesPlace = false;
  /** A release of this process is handing permits off to this waiter (WakeBus.claimHandOffTarget). */
  claimed = false;
  /** The grant a hand-off within the process brought: its fencing token, when it was sent, and how many hand-offs led to it. */
  handOffGrant: { fencingToken: number; leaseFrom: number; handOffs: number; handOffsSince?: number } | undefined;
  private resolvePark: ((result: ParkResult) => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private wakeAt = Infinity;

  /** Queued waiters (fair, or any that waited once on a store with a queue) hold a place on the server and are granted by id. */
  constructor(
    /** The channel it listens on: its engine's inbox for the lock, or the lock's own channel. */
    readonly channel: string,
    public fair: boolean,
    public waiterId: string,
    /** The lock's own channel, by which a release of this process knows the lock is waited for. */
    readonly lockChannel: string = channel,
  ) {}

  /** Waits until a wake-up, a hand-off, `ms` elapsing or `interrupt()`; returns at once if one is pending. */
  park(ms: number): Promise<ParkResult> {
    if (this.toldOfHandOff) return Promise.resolve('handOff');
    if (this.handOffGrant) return Promise.resolve('handOffHere');
    if (this.pendingWake) {
      this.pendingWake = false;
      return Promise.resolve('wake');
    }
    return new Promise<ParkResult>((resolve) => {
      this.resolvePark = resolve;
      this.arm(ms);
    });
  }

  /**
   * Another waiter was handed the lock. If it died in the queue, the lock lapses when its
   * hand-off lease does: check back then, not at the end of the wait budget.
   */
  handedToAnother(): void {
    if (this.resolvePark && performance.now() + this.handoffMs < this.wakeAt) this.arm(this.handoffMs + 1);
  }

  private arm(ms: number): void {
    clearTimeout(this.timer);
    const wait = Math.max(1, Math.ceil(ms));
    this.wakeAt = performance.now() + wait;
    this.timer = setTimeout(() => this.settle('timer'), wait);
  }

  wake(): void {
    if (!this.settle('wake')) this.pendingWake = true;
  }

  /** A release handed this waiter the lock, and its inbox said so. */
  handOffTold(notice: GrantNotice): void {
    this.toldOfHandOff = true;
    this.grantNotice = notice;
    this.settle('handOff');
  }

  interrupt(): void {
    this.settle('interrupt');
  }

  get parked(): boolean {
    return this.resolvePark !== undefined;
  }

  /**
   * A release of this process handed its permits or its mutex off to this waiter. One no longer
   * parked woke meanwhile: its next attempt finds the grant (the holder paths of sem-acquire.lua
   * and acquire.lua), and if it parks first, the grant is there for it. One that gives up
   * withdraws, which releases what was handed to it.
   */
  takeHandOff(fencingToken: number, leaseFrom: number, handOffs: number, handOffsSince?: number): void {
    this.claimed = false;
    this.handOffGrant = { fencingToken, leaseFrom, handOffs, handOffsSince };
    this.settle('handOffHere');
  }

  private settle(result: ParkResult): boolean {
    const resolve = this.resolvePark;
    if (!resolve) return false;
    this.resolvePark = undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (result === 'wake') this.pendingWake = false;
    resolve(result);
    return true;
  }
}
