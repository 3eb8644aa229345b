import type { MutexHandOff, PermitHandOff } from './lock-store';

/**
 * A waiting acquire, as the bus's contract names it: core/wake's Waiter is the one. What a
 * release of this process needs of a parked semaphore waiter it hands permits off to.
 */
export interface BusWaiter {
  /** What a release needs to hand its permits off to this waiter. */
  readonly handOff: PermitHandOff | undefined;
  /** What a release needs to hand its mutex off to this waiter. */
  readonly mutexHandOff: MutexHandOff | undefined;
  /** It holds its engine's place in the lock's queue on the server. */
  readonly fair: boolean;
  /** A release of this process is handing permits off to it. */
  claimed: boolean;
  /** Wakes it to try by itself. */
  wake(): void;
  /** Permits a release handed off to it: their fencing token, when the hand-off was sent, and how many hand-offs led here. */
  takeHandOff(fencingToken: number, leaseFrom: number, handOffs: number, handOffsSince?: number): void;
}

/**
 * How waiting acquires hear of releases and grants: what the engine needs of a backend's
 * wake-up bus. WakeChannels is the one both backends give.
 */
export interface WakeBus {
  /**
   * This engine's inbox: the suffix of the channels its queued mutex waiters listen on
   * (`<lock channel>:<inbox>`), so a release that hands a lock off tells this engine alone.
   */
  readonly inboxId: string;
  /** Registers a waiter; the returned promise settles once its channel is subscribed. */
  join(waiter: BusWaiter): Promise<unknown>;
  /** Whether `channel` is subscribed already (joinIfLive would take a waiter). */
  isLive(channel: string): boolean;
  /** Registers a waiter on a channel that is subscribed already; false, and nothing done, when it is not. */
  joinIfLive(waiter: BusWaiter): boolean;
  /**
   * The lock channels a waiter of this process waits on (a release of that lock will wake or
   * hand off), by the lock's own channel, not the inbox: a set read on every release, so
   * asking costs no call.
   */
  readonly waitedOn: ReadonlySet<string>;
  /** A parked semaphore waiter to hand released permits off to, marked so no other release picks it. */
  claimHandOffTarget(channel: string): BusWaiter | undefined;
  /**
   * Whether `waiter` may take a place on the server for its lock now. Waiters that share one
   * place per engine (semaphores: the rest are served by hand-offs within the process) take it
   * in turn: true for the one that holds it, or takes it now; false while another does.
   */
  mayTakePlace(waiter: BusWaiter): boolean;
  /**
   * Whether another waiter of this engine holds the place `waiter` would share (semaphores):
   * the engine is queued on the server already, so a new caller waits in line behind it.
   */
  placeTaken(waiter: BusWaiter): boolean;
  /**
   * Mutexes this engine holds, by the lock's channel: `hold` as a lease begins (or a release
   * hands the lock off to a waiter here), `unhold` as it ends. While one is held here, a new
   * waiter of the engine waits in line for a hand-off here, without asking Redis; once none is, one
   * waiter in line is woken to take the engine's place in the queue.
   */
  hold(lockChannel: string, ownerToken: string): void;
  unhold(lockChannel: string, ownerToken: string): void;
  heldHere(lockChannel: string): boolean;
  /** Removes a waiter; `acquired`: it got its lock or permits. */
  leave(waiter: BusWaiter, acquired: boolean): void;
  /** Interrupts every waiter and closes what the bus opened. */
  close(): Promise<void>;
}

/** Where a subscriber hands what it hears. */
export interface WakeSink {
  /** One message published on `channel`. */
  deliver(channel: string, message: string): void;
  /** The connection came back after a loss: messages sent meanwhile are gone. */
  reconnected(): void;
}

/** The connection half of a wake-up bus: subscribing to the channels waiters wait on. */
export interface WakeSubscriber {
  /** Settles once a message published on `channel` from now on reaches the sink. */
  subscribe(channel: string): Promise<unknown>;
  /** No waiter is left on `channel`. */
  unsubscribe(channel: string): void;
  close(): Promise<void>;
}

/** Subscribes to channels on a connection of its own, for leadership announcements (see LeaderBus). */
export interface ChannelListener {
  listen(channel: string, wake: () => void): Promise<() => void>;
}
