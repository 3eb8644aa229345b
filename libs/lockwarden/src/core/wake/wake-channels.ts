import { randomBytes } from 'node:crypto';
import { parseGrant, WIRE } from '../backend/wire';
import type { Waiter } from './waiter';
import type { WakeBus, WakeSink, WakeSubscriber } from '../backend/wake-bus';

interface ChannelState {
  readonly waiters: Waiter[];
  ready: Promise<unknown>;
  /** The subscription is in place: a message published from now on reaches the waiters. */
  live: boolean;
  /** Of waiters that share one place per engine (semaphores), the one holding it. */
  placeHolder: Waiter | undefined;
  idleSince: number;
}

/** How long a channel with no waiters stays subscribed, so steady contention does not resubscribe per wait. */
const LINGER_MS = 5_000;

/**
 * The half of the wake-up bus both backends share: which waiter a release or grant message
 * is for. The backend brings the messages: Redis through its subscriber connection (one per
 * engine, never one per waiter), memory by calling deliver().
 *
 * A release wakes only the longest-waiting local non-fair waiter (only one can
 * win, so waking all would just make them race); a grant goes to the waiter it
 * names. After a reconnect every waiter retries, since messages sent while the
 * connection was down are lost.
 */
export class WakeChannels implements WakeBus, WakeSink {
  private readonly channels = new Map<string, ChannelState>();
  private readonly waited = new Set<string>();
  /** The owner tokens of the mutexes held here, by lock channel (see hold). */
  private readonly holders = new Map<string, Set<string>>();
  readonly waitedOn: ReadonlySet<string> = this.waited;
  private sweepTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly subscriber: WakeSubscriber | undefined;
  /** Random per engine: two engines of one process (or one instanceId) never share an inbox. */
  readonly inboxId = randomBytes(6).toString('hex');

  /**
   * `subscribe` makes the backend's subscriber, given what to call when a message arrives
   * or its connection came back; none for the in-memory backend, which calls deliver().
   */
  constructor(subscribe?: (sink: WakeSink) => WakeSubscriber) {
    this.subscriber = subscribe?.(this);
  }

  /** Registers a waiter; the returned promise settles once its channel is subscribed. */
  join(waiter: Waiter): Promise<unknown> {
    let state = this.channels.get(waiter.channel);
    if (!state) {
      const created: ChannelState = {
        waiters: [],
        ready: Promise.resolve(),
        live: false,
        idleSince: 0,
        placeHolder: undefined,
      };
      created.ready = this.subscribe(waiter.channel);
      created.ready.then(
        () => (created.live = true),
        () => undefined,
      );
      state = created;
      this.channels.set(waiter.channel, state);
    }
    state.waiters.push(waiter);
    this.waited.add(waiter.lockChannel);
    return state.ready;
  }

  /**
   * Registers a waiter on a channel that is subscribed already, so that a message arriving
   * while its first attempt is in flight is kept for it (Waiter.pendingWake); false, and
   * nothing done, when the channel is not subscribed yet.
   */
  isLive(channel: string): boolean {
    return this.channels.get(channel)?.live === true;
  }

  joinIfLive(waiter: Waiter): boolean {
    const state = this.channels.get(waiter.channel);
    if (!state?.live) return false;
    state.waiters.push(waiter);
    this.waited.add(waiter.lockChannel);
    return true;
  }

  /**
   * A parked semaphore waiter to hand released permits off to, the longest waiting first, marked
   * so that no other release picks it too; undefined when there is none.
   */
  claimHandOffTarget(channel: string): Waiter | undefined {
    // Waiters that queue listen on this engine's inbox for the lock.
    const state = this.channels.get(`${channel}:${this.inboxId}`) ?? this.channels.get(channel);
    if (!state) return undefined;
    for (const w of state.waiters) {
      if ((w.handOff ?? w.mutexHandOff) && w.parked && !w.claimed && !w.pendingWake && !w.toldOfHandOff) {
        w.claimed = true;
        return w;
      }
    }
    return undefined;
  }

  mayTakePlace(waiter: Waiter): boolean {
    if (!waiter.sharesPlace) return true;
    const state = this.channels.get(waiter.channel);
    if (!state) return true;
    const holder = state.placeHolder;
    if (holder && holder !== waiter && state.waiters.includes(holder)) return false;
    state.placeHolder = waiter;
    return true;
  }

  placeTaken(waiter: Waiter): boolean {
    if (!waiter.sharesPlace) return false;
    const state = this.channels.get(waiter.channel);
    const holder = state?.placeHolder;
    return holder !== undefined && holder !== waiter && state!.waiters.includes(holder);
  }

  hold(lockChannel: string, ownerToken: string): void {
    const held = this.holders.get(lockChannel);
    // Only where a waiter of this engine listens (or did, lately): an uncontended lock costs
    // nothing here. A waiter that comes while it is held then asks Redis, and takes the place.
    if (!held && !this.channels.has(`${lockChannel}:${this.inboxId}`)) return;
    if (held) held.add(ownerToken);
    else this.holders.set(lockChannel, new Set([ownerToken]));
  }

  unhold(lockChannel: string, ownerToken: string): void {
    const held = this.holders.get(lockChannel);
    if (!held?.delete(ownerToken) || held.size > 0) return;
    this.holders.delete(lockChannel);
    // Nobody here holds it now: the waiters in line would wait for a hand-off here that will not come.
    // One of them takes the engine's place in the queue, unless a waiter holds it already.
    const state = this.channels.get(`${lockChannel}:${this.inboxId}`);
    if (!state || (state.placeHolder && state.waiters.includes(state.placeHolder))) return;
    state.waiters.find((w) => w.mutexHandOff && !w.fair && !w.claimed)?.wake();
  }

  heldHere(lockChannel: string): boolean {
    return this.holders.has(lockChannel);
  }

  /** Removes a waiter. One that leaves holding an unused wake-up passes it on. */
  leave(waiter: Waiter, acquired: boolean): void {
    const state = this.channels.get(waiter.channel);
    if (!state) {
      // Its channel failed to subscribe and was dropped, with whoever still waited on it.
      this.waited.delete(waiter.lockChannel);
      return;
    }
    const i = state.waiters.indexOf(waiter);
    if (i >= 0) state.waiters.splice(i, 1);
    if (state.placeHolder === waiter) {
      // The engine's place goes with it: the longest waiting of the others takes it now, so
      // the engine keeps its turn in the queue (a hand-off, within the process or from the queue, served the one leaving).
      // A mutex waiter that leaves with the lock holds it here: the others wait in line for
      // its hand-off, or for its end (unhold) to take the place then.
      state.placeHolder = undefined;
      if (!(acquired && waiter.mutexHandOff)) state.waiters.find((w) => w.sharesPlace && !w.fair)?.wake();
    }
    // A semaphore caller that got its permits may have got them without the wake-up it was
    // sent: another waiter may fit in the permits that wake-up announced.
    if (waiter.pendingWake && (!acquired || waiter.handOff)) this.wakeOne(state);
    if (state.waiters.length === 0) {
      this.waited.delete(waiter.lockChannel);
      state.idleSince = Date.now();
      this.scheduleSweep();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.sweepTimer);
    for (const state of this.channels.values()) for (const w of state.waiters) w.interrupt();
    this.channels.clear();
    this.waited.clear();
    await this.subscriber?.close();
  }

  /**
   * Subscribes through the backend's subscriber. Ready once it has subscribed: a message
   * published from then on reaches the waiters.
   */
  private subscribe(channel: string): Promise<unknown> {
    // No subscriber: messages arrive through deliver() (the in-memory backend).
    if (!this.subscriber) return Promise.resolve();
    const done = this.subscriber.subscribe(channel);
    // The waiter handles a failure (as a backend error); never leave it unhandled here.
    done.catch(() => this.channels.delete(channel));
    return done;
  }

  /** The subscriber's connection came back: messages sent while it was down are lost, so every waiter retries. */
  reconnected(): void {
    for (const state of this.channels.values()) for (const w of state.waiters) w.wake();
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
        if (w.fair && w.waiterId === grant.waiterId) w.handOffTold(grant);
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
      // Permits are being handed off to a claimed waiter: the wake-up is for someone else.
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
    const now = Date.now();
    let idleLeft = false;
    for (const [channel, state] of this.channels) {
      if (state.waiters.length > 0) continue;
      if (now - state.idleSince >= LINGER_MS) {
        this.channels.delete(channel);
        this.subscriber?.unsubscribe(channel);
      } else {
        idleLeft = true;
      }
    }
    if (idleLeft) this.scheduleSweep();
  }
}
