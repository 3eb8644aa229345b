/** Something that delivers a published message to its waiters (an engine's WakeChannels). */
export interface MessageSink {
  deliver(channel: string, message: string): void;
}

export interface MutexState {
  owner: string;
  fence: number;
  instance: string;
  expiresAt: number;
}

export interface QueuedWaiter {
  token: string;
  deadline: number;
  leaseMs: number;
  waiterId: string;
  /** Its engine's inbox: a hand-off is published there only. */
  inbox: string;
  /** The number of its latest attempt, named in a hand-off. */
  seq: number;
  instance: string;
}

export interface RwState {
  writer?: { token: string; deadline: number; fence: number; instance: string };
  readers: Map<string, { deadline: number; instance: string }>;
}

export interface SemState {
  holders: Map<string, { deadline: number; permits: number; fence: number; instance: string }>;
  limit: number | undefined;
}

/**
 * The data a Redis server would hold for the memory backend, and the small steps the
 * scripts' operations share: one object that every engine sharing a backend sees.
 */
export class MemoryState {
  /** @internal */
  readonly mutexes = new Map<string, MutexState>();
  /** @internal */
  readonly counters = new Map<string, number>();
  /** @internal */
  readonly queues = new Map<string, QueuedWaiter[]>();
  /** @internal */
  readonly rw = new Map<string, RwState>();
  /** @internal */
  readonly waitingWriters = new Map<string, Map<string, number>>();
  /** @internal */
  readonly semaphores = new Map<string, SemState>();
  /** @internal */
  readonly tickEntries = new Map<string, { value: string; expiresAt: number }>();
  private readonly sinks = new Set<MessageSink>();

  /** Called by an engine's bus, so releases reach its waiters. */
  attach(sink: MessageSink): void {
    this.sinks.add(sink);
  }

  detach(sink: MessageSink): void {
    this.sinks.delete(sink);
  }

  /** Forgets every lock and counter, as a restarted Redis without persistence would; tokens still rise after it. */
  reset(): void {
    this.mutexes.clear();
    this.counters.clear();
    this.queues.clear();
    this.rw.clear();
    this.waitingWriters.clear();
    this.semaphores.clear();
    this.tickEntries.clear();
  }

  // ---- helpers ------------------------------------------------------------------------------------

  /** @internal */
  liveMutex(key: string, now: number): MutexState | undefined {
    const held = this.mutexes.get(key);
    if (held && held.expiresAt <= now) {
      this.mutexes.delete(key);
      return undefined;
    }
    return held;
  }

  /** The last write's token, for a read; a missing counter is seeded from the clock, as lastFence in rw-acquire.lua. */
  lastFence(key: string): number {
    let last = this.counters.get(key);
    if (last === undefined) this.counters.set(key, (last = clockMicros()));
    return last;
  }

  /** The next fencing token; a missing counter starts from the clock in microseconds, as nextFence in the scripts. */
  incr(key: string): number {
    const last = this.counters.get(key);
    const next = last === undefined ? clockMicros() : last + 1;
    this.counters.set(key, next);
    return next;
  }

  /** @internal */
  queue(key: string): QueuedWaiter[] {
    let queue = this.queues.get(key);
    if (!queue) this.queues.set(key, (queue = []));
    return queue;
  }

  dequeue(queue: QueuedWaiter[], token: string): void {
    const i = queue.findIndex((w) => w.token === token);
    if (i >= 0) queue.splice(i, 1);
  }

  /** @internal */
  rwState(key: string): RwState {
    let state = this.rw.get(key);
    if (!state) this.rw.set(key, (state = { readers: new Map() }));
    return state;
  }

  /** @internal */
  semState(key: string): SemState {
    let state = this.semaphores.get(key);
    if (!state) this.semaphores.set(key, (state = { holders: new Map(), limit: undefined }));
    return state;
  }

  /** @internal */
  writers(key: string): Map<string, number> {
    let writers = this.waitingWriters.get(key);
    if (!writers) this.waitingWriters.set(key, (writers = new Map()));
    return writers;
  }

  /** @internal */
  publish(channel: string, message: string): void {
    // Delivered on a later tick, as a pub/sub message would be, never inside the caller's operation.
    queueMicrotask(() => {
      for (const sink of this.sinks) sink.deliver(channel, message);
    });
  }
}

/**
 * The wall clock in microseconds, read through the monotonic clock: it matches the wall
 * clock when the process started, and a wall clock stepped back later cannot lower it.
 */
function clockMicros(): number {
  return Math.floor((performance.timeOrigin + performance.now()) * 1000);
}
