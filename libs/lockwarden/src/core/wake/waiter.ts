import type { PermitHandOff } from '../backend/lock-store';

type ParkResult = 'wake' | 'grant' | 'pass' | 'timer' | 'interrupt';

/**
 * One waiting acquire. A wake-up that arrives while its attempt is still in
 * flight is remembered, so "attempt failed" followed by "start waiting" never
 * misses a release that landed in between.
 */
export class Waiter {
  pendingWake = false;
  /** A release handed this waiter the lock: it must confirm before using it. */
  handedOver = false;
  /** The longest a release hands another waiter the lock for before it must confirm it. */
  handoffMs = Infinity;
  /** Semaphores: what a release of this process needs to pass its permits to this waiter. */
  handOff: PermitHandOff | undefined;
  /** A release of this process is passing permits to this waiter (WakeBus.claimHandOffTarget). */
  claimed = false;
  /** The grant a pass brought: its fencing token, when the pass was sent, and how many passes led to it. */
  handOffGrant: { fencingToken: number; leaseFrom: number; handOffs: number } | undefined;
  private resolvePark: ((result: ParkResult) => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private wakeAt = Infinity;

  /** Fair waiters (and starving non-fair ones) hold a place in the server's queue and are granted by id. */
  constructor(
    readonly channel: string,
    public fair: boolean,
    public waiterId: string,
  ) {}

  /** Waits until a wake-up, a grant, `ms` elapsing or `interrupt()`; returns at once if one is pending. */
  park(ms: number): Promise<ParkResult> {
    if (this.handedOver) return Promise.resolve('grant');
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

  grant(): void {
    this.handedOver = true;
    this.settle('grant');
  }

  interrupt(): void {
    this.settle('interrupt');
  }

  get parked(): boolean {
    return this.resolvePark !== undefined;
  }

  /**
   * A release passed its permits to this waiter. One no longer parked is trying by itself
   * already: its attempt finds the grant (sem-acquire.lua's holder path), so nothing is lost.
   */
  takeHandOff(fencingToken: number, leaseFrom: number, handOffs: number): void {
    this.claimed = false;
    if (!this.resolvePark) return;
    this.handOffGrant = { fencingToken: fencingToken, leaseFrom, handOffs: handOffs };
    this.settle('pass');
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
