import type { Redis, Cluster } from 'ioredis';
import { closeClient } from '../store/redis-client';
import { parseGrant, WIRE } from '../scripts/wire';
import type { RedisClient } from '../store/redis-client';
import type { PermitPass } from '../store/lock-store';

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
  pass: PermitPass | undefined;
  /** A release of this process is passing permits to this waiter (WakeBus.claimPassTarget). */
  claimed = false;
  /** The grant a pass brought: its fencing token, when the pass was sent, and how many passes led to it. */
  passed: { fence: number; leaseFrom: number; passes: number } | undefined;
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
  takePass(fence: number, leaseFrom: number, passes: number): void {
    this.claimed = false;
    if (!this.resolvePark) return;
    this.passed = { fence, leaseFrom, passes };
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

interface ChannelState {
  readonly waiters: Waiter[];
  ready: Promise<unknown>;
  /** The subscription is in place: a message published from now on reaches the waiters. */
  live: boolean;
  idleSince: number;
}

/** How long a channel with no waiters stays subscribed, so steady contention does not resubscribe per wait. */
const LINGER_MS = 5_000;

/**
 * Delivers release and grant messages to waiting acquires over one subscriber
 * connection per engine, never one per waiter.
 *
 * A release wakes only the longest-waiting local non-fair waiter (only one can
 * win, so waking all would just make them race); a grant goes to the waiter it
 * names. After a reconnect every waiter retries, since messages sent while the
 * connection was down are lost.
 */
export class WakeBus {
  private subscribers: (Redis | Cluster)[] | undefined;
  private readonly channels = new Map<string, ChannelState>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Cluster: releases come by sharded pub/sub. */
  private readonly sharded: boolean;

  /**
   * `mains` are the clients to duplicate for subscribing: one, or in quorum
   * mode one per node (a release heard from any node wakes the waiter), or
   * none for the in-memory backend, which calls deliver().
   */
  constructor(private readonly mains: readonly RedisClient[]) {
    this.sharded = mains[0]?.isCluster === true;
  }

  /** Registers a waiter; the returned promise settles once its channel is subscribed. */
  join(waiter: Waiter): Promise<unknown> {
    let state = this.channels.get(waiter.channel);
    if (!state) {
      const created: ChannelState = { waiters: [], ready: Promise.resolve(), live: false, idleSince: 0 };
      created.ready = this.subscribe(this.connections(), waiter.channel);
      created.ready.then(
        () => (created.live = true),
        () => undefined,
      );
      state = created;
      this.channels.set(waiter.channel, state);
    }
    state.waiters.push(waiter);
    return state.ready;
  }

  /**
   * Registers a waiter on a channel that is subscribed already, so that a message arriving
   * while its first attempt is in flight is kept for it (Waiter.pendingWake); false, and
   * nothing done, when the channel is not subscribed yet.
   */
  joinIfLive(waiter: Waiter): boolean {
    const state = this.channels.get(waiter.channel);
    if (!state?.live) return false;
    state.waiters.push(waiter);
    return true;
  }

  /**
   * A parked semaphore waiter to pass released permits to, the longest waiting first, marked
   * so that no other release picks it too; undefined when there is none.
   */
  claimPassTarget(channel: string): Waiter | undefined {
    const state = this.channels.get(channel);
    if (!state) return undefined;
    for (const w of state.waiters) {
      if (w.pass && w.parked && !w.claimed && !w.pendingWake) {
        w.claimed = true;
        return w;
      }
    }
    return undefined;
  }

  /** Removes a waiter. One that leaves holding an unused wake-up passes it on. */
  leave(waiter: Waiter, acquired: boolean): void {
    const state = this.channels.get(waiter.channel);
    if (!state) return;
    const i = state.waiters.indexOf(waiter);
    if (i >= 0) state.waiters.splice(i, 1);
    // A semaphore caller that got its permits may have got them without the wake-up it was
    // sent: another waiter may fit in the permits that wake-up announced.
    if (waiter.pendingWake && (!acquired || waiter.pass)) this.wakeOne(state);
    if (state.waiters.length === 0) {
      state.idleSince = Date.now();
      this.scheduleSweep();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.sweepTimer);
    for (const state of this.channels.values()) for (const w of state.waiters) w.interrupt();
    this.channels.clear();
    const subs = this.subscribers ?? [];
    this.subscribers = undefined;
    await Promise.all(
      subs.map((sub) => {
        sub.removeAllListeners('ready');
        return closeClient(sub);
      }),
    );
  }

  private connections(): (Redis | Cluster)[] {
    this.subscribers ??= this.mains.map((main) => this.connect(main));
    return this.subscribers;
  }

  private connect(main: RedisClient): Redis | Cluster {
    // The subscriber is always ours, even when the main client is the user's.
    const sub: Redis | Cluster = main.isCluster
      ? (main as Cluster).duplicate(undefined, { shardedSubscribers: true })
      : (main as Redis).duplicate({ disconnectTimeout: 0 });
    sub.on('error', () => {
      // Reconnection is automatic; waits are capped by the lease, so nothing hangs meanwhile.
    });
    sub.on(this.sharded ? 'smessage' : 'message', (channel: string, message: string) =>
      this.dispatch(channel, message),
    );
    let firstReady = true;
    sub.on('ready', () => {
      if (firstReady) {
        firstReady = false;
        return;
      }
      for (const state of this.channels.values()) for (const w of state.waiters) w.wake();
    });
    return sub;
  }

  /**
   * Subscribes on every connection. Ready once one of them has subscribed: in
   * quorum mode a node that is down must not hold waiters up, and a release
   * is published on every node that held the lock.
   */
  private subscribe(subs: (Redis | Cluster)[], channel: string): Promise<unknown> {
    // No connection at all: messages arrive through deliver() (the in-memory backend).
    if (subs.length === 0) return Promise.resolve();
    const each = subs.map((sub) => (this.sharded ? sub.ssubscribe(channel) : sub.subscribe(channel)));
    const done = each.length === 1 ? each[0] : Promise.any(each);
    for (const p of each) p.catch(() => undefined);
    // The waiter handles a failure (as a backend error); never leave it unhandled here.
    done.catch(() => this.channels.delete(channel));
    return done;
  }

  /** Hands one published message to the waiters of its channel. */
  deliver(channel: string, message: string): void {
    this.dispatch(channel, message);
  }

  private dispatch(channel: string, message: string): void {
    const state = this.channels.get(channel);
    if (!state || state.waiters.length === 0) return;
    const grant = parseGrant(message);
    if (grant) {
      for (const w of state.waiters) {
        if (w.fair && w.waiterId === grant.waiterId) w.grant();
        else w.handedToAnother();
      }
      return;
    }
    if (message === WIRE.rwChanged) {
      for (const w of state.waiters) w.wake();
      return;
    }
    this.wakeOne(state);
    // Fair waiters hear of a plain release only when no live waiter was queued: let them all retry.
    for (const w of state.waiters) if (w.fair) w.wake();
  }

  private wakeOne(state: ChannelState): void {
    for (const w of state.waiters) {
      // A claimed waiter is being passed permits: the wake-up is for someone else.
      if (!w.fair && !w.pendingWake && !w.claimed) {
        w.wake();
        return;
      }
    }
  }

  private scheduleSweep(): void {
    if (this.sweepTimer || this.closed) return;
    this.sweepTimer = setTimeout(() => this.sweep(), LINGER_MS);
    this.sweepTimer.unref();
  }

  private sweep(): void {
    this.sweepTimer = undefined;
    const subs = this.subscribers;
    if (!subs) return;
    const now = Date.now();
    let idleLeft = false;
    for (const [channel, state] of this.channels) {
      if (state.waiters.length > 0) continue;
      if (now - state.idleSince >= LINGER_MS) {
        this.channels.delete(channel);
        for (const sub of subs) {
          const done = this.sharded ? sub.sunsubscribe(channel) : sub.unsubscribe(channel);
          done.catch(() => undefined);
        }
      } else {
        idleLeft = true;
      }
    }
    if (idleLeft) this.scheduleSweep();
  }
}
