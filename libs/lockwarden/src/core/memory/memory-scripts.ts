import type { LockInfo } from './inspect';
import type { MutexKeys, RwKeys, SemKeys } from './lock-keys';
import type { RenewItem, StoreAcquire, StoreRwAcquire, StoreSemAcquire } from './lock-store';
import type { LockBackend, Topology } from './lock-backend';
import { MemoryLockStore } from './memory-lock-store';
import { forceUnlockMemory, inspectMemory } from './memory-inspect';
import { WakeBus } from '../wait/wake-bus';
import { grantMessage, WIRE } from '../scripts/wire';
import { MemoryTickStore } from '../schedule/memory-tick-store';

/** Something that delivers a published message to its waiters (a WakeBus). */
export interface MessageSink {
  deliver(channel: string, message: string): void;
}

interface MutexState {
  owner: string;
  fence: number;
  instance: string;
  expiresAt: number;
}

interface QueuedWaiter {
  token: string;
  deadline: number;
  leaseMs: number;
  waiterId: string;
  instance: string;
}

interface RwState {
  writer?: { token: string; deadline: number; fence: number; instance: string };
  readers: Map<string, { deadline: number; instance: string }>;
}

interface SemState {
  holders: Map<string, { deadline: number; permits: number; fence: number; instance: string }>;
  limit: number | undefined;
}

/**
 * Redis in process memory, for tests: the data and the operations of the Lua
 * scripts (acquire, release, rw-acquire, rw-release, sem-acquire, sem-release,
 * sem-limit, renew, inspect, force-unlock), one JavaScript function each, with the same replies. Every
 * engine that shares a backend sees the same locks, as processes sharing a
 * Redis would. Time is this process's monotonic clock.
 *
 * It is a test double. The behaviour suite in the repository runs against
 * it and against real Redis, so that the two cannot drift apart.
 *
 * @example
 * ```ts
 * const backend = new MemoryLockBackend();
 * // Two "instances" of a service that contend for the same locks, with no Redis:
 * const a = await Test.createTestingModule({ imports: [LockTestingModule.forRoot({ backend })], providers: [Jobs] }).compile();
 * const b = await Test.createTestingModule({ imports: [LockTestingModule.forRoot({ backend })], providers: [Jobs] }).compile();
 * ```
 */
export class MemoryLockBackend implements LockBackend {
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

  /** The store an engine with this instance id uses. */
  store(instanceId: string): MemoryLockStore {
    return new MemoryLockStore(this, instanceId);
  }

  /** The backend side: one engine's store, and a wake-up bus this backend delivers to. */
  open(instanceId: string): Topology {
    const bus = new WakeBus([]);
    this.attach(bus);
    const lockHolder = (key: string): string | undefined => {
      const held = this.mutexes.get(key);
      return held && held.expiresAt > performance.now() ? held.instance : undefined;
    };
    return {
      store: this.store(instanceId),
      ticks: new MemoryTickStore(this.tickEntries, lockHolder, instanceId),
      bus,
      client: undefined,
      close: async () => {
        await bus.close();
        this.detach(bus);
      },
    };
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

  // ---- the scripts' operations, on the data above --------------------------------------------

  acquire(req: StoreAcquire, instance: string): number {
    const now = performance.now();
    const { keys, token } = req;
    const held = this.liveMutex(keys.lock, now);
    if (held?.owner === token) {
      held.expiresAt = now + req.leaseMs; // a handed-over lock, confirmed: its full lease starts now
      return held.fence;
    }
    let head: QueuedWaiter | undefined;
    const queue = this.queue(keys.queue);
    if (req.fair) {
      while (queue.length > 0 && queue[0].deadline < now) queue.shift();
      head = queue[0];
    }
    if (!held && (!head || head.token === token)) {
      const fence = this.incr(keys.fence);
      this.mutexes.set(keys.lock, { owner: token, fence, instance, expiresAt: now + req.leaseMs });
      if (head) this.dequeue(queue, token);
      return fence;
    }
    if (req.fair) {
      const record = { token, deadline: now + req.waiterTtlMs, leaseMs: req.grantMs, waiterId: req.waiterId, instance };
      const place = queue.findIndex((w) => w.token === token);
      if (place >= 0) queue[place] = record;
      else queue.push(record);
      if (!held) return -Math.max(1, Math.ceil(head!.deadline - now));
    }
    return -Math.max(1, Math.ceil(held ? held.expiresAt - now : 1));
  }

  release(keys: MutexKeys, token: string): boolean {
    const now = performance.now();
    const held = this.liveMutex(keys.lock, now);
    const queue = this.queue(keys.queue);
    if (held?.owner !== token) {
      this.dequeue(queue, token);
      return false;
    }
    this.mutexes.delete(keys.lock);
    while (queue.length > 0) {
      const next = queue.shift()!;
      if (next.deadline >= now) {
        // Lock passing: the waiter owns the lock before it hears about it.
        const fence = this.incr(keys.fence);
        this.mutexes.set(keys.lock, {
          owner: next.token,
          fence,
          instance: next.instance,
          expiresAt: now + next.leaseMs,
        });
        this.publish(keys.channel, grantMessage(next.waiterId, fence));
        return true;
      }
    }
    this.publish(keys.channel, WIRE.released);
    return true;
  }

  rwAcquire(req: StoreRwAcquire, instance: string): number {
    const now = performance.now();
    const { keys, token } = req;
    const state = this.rwState(keys.lock);
    let latest = now;
    for (const [t, r] of state.readers) {
      if (r.deadline < now) state.readers.delete(t);
      else latest = Math.max(latest, r.deadline);
    }
    if (state.writer && state.writer.deadline < now) state.writer = undefined;
    const writer = state.writer;
    if (writer) latest = Math.max(latest, writer.deadline);
    const writers = this.writers(keys.writers);
    if (req.mode === 'read') {
      if (state.readers.has(token)) return this.counters.get(keys.fence) ?? 0;
      const downgrade = writer !== undefined && writer.token === req.heldWriteToken;
      if (writer && !downgrade) return -Math.max(1, Math.ceil(writer.deadline - now));
      if (!downgrade && req.writerPreference) {
        let first = Infinity;
        for (const [t, deadline] of writers) {
          if (deadline < now) writers.delete(t);
          else first = Math.min(first, deadline);
        }
        if (first !== Infinity) return -Math.max(1, Math.ceil(first - now));
      }
      state.readers.set(token, { deadline: now + req.leaseMs, instance });
      return this.lastFence(keys.fence);
    }
    if (writer?.token === token) return writer.fence;
    if (!writer && state.readers.size === 0) {
      const fence = this.incr(keys.fence);
      state.writer = { token, deadline: now + req.leaseMs, fence, instance };
      writers.delete(token);
      return fence;
    }
    writers.set(token, now + req.placeTtlMs);
    return -Math.max(1, Math.ceil(latest - now));
  }

  rwRelease(keys: RwKeys, token: string, mode: 'read' | 'write'): boolean {
    const state = this.rwState(keys.lock);
    const writers = this.writers(keys.writers);
    if (mode === 'write') {
      if (state.writer?.token !== token) {
        writers.delete(token);
        return false;
      }
      state.writer = undefined;
      this.publish(keys.channel, WIRE.rwChanged);
      return true;
    }
    if (!state.readers.delete(token)) return false;
    const now = performance.now();
    for (const r of state.readers.values()) if (r.deadline >= now) return true;
    if (writers.size > 0) this.publish(keys.channel, WIRE.rwChanged);
    return true;
  }

  semAcquire(req: StoreSemAcquire, instance: string): number {
    const now = performance.now();
    const state = this.semState(req.keys.lock);
    for (const [t, h] of state.holders) if (h.deadline < now) state.holders.delete(t);
    const mine = state.holders.get(req.token);
    if (mine) return mine.fence;
    state.limit ??= req.initialLimit;
    let used = 0;
    let earliest = Infinity;
    for (const h of state.holders.values()) {
      used += h.permits;
      earliest = Math.min(earliest, h.deadline);
    }
    if (used + req.permits <= state.limit) {
      const fence = this.incr(req.keys.fence);
      state.holders.set(req.token, { deadline: now + req.leaseMs, permits: req.permits, fence, instance });
      return fence;
    }
    return -Math.max(1, Math.ceil(earliest === Infinity ? req.leaseMs : earliest - now));
  }

  semRelease(keys: SemKeys, token: string): boolean {
    const state = this.semState(keys.lock);
    const held = state.holders.get(token);
    if (!held) return false;
    state.holders.delete(token);
    this.publish(keys.channel, WIRE.rwChanged);
    return held.deadline >= performance.now();
  }

  /** sem-inspect.lua's reply: limit (-1: none), last fence, then instance, permits, ms left per live holder. */
  semInspect(keys: SemKeys): (string | number)[] {
    const now = performance.now();
    const state = this.semaphores.get(keys.lock);
    const out: (string | number)[] = [state?.limit ?? -1, String(this.counters.get(keys.fence) ?? 0)];
    for (const h of state?.holders.values() ?? []) {
      if (h.deadline >= now) out.push(h.instance, h.permits, Math.ceil(h.deadline - now));
    }
    return out;
  }

  semLimit(keys: SemKeys, limit: number): number {
    const state = this.semState(keys.lock);
    const old = state.limit ?? 0;
    state.limit = limit;
    if (limit > old) this.publish(keys.channel, WIRE.rwChanged);
    return old;
  }

  renew(items: readonly RenewItem[]): boolean[] {
    const now = performance.now();
    return items.map((item) => {
      if (item.kind === 'permit') {
        const holder = this.semaphores.get(item.lockKey)?.holders.get(item.token);
        if (!holder || holder.deadline < now) return false;
        holder.deadline = now + item.leaseMs;
        return true;
      }
      if (item.kind === 'mutex') {
        const held = this.liveMutex(item.lockKey, now);
        if (held?.owner !== item.token) return false;
        held.expiresAt = now + item.leaseMs;
        return true;
      }
      const state = this.rw.get(item.lockKey);
      if (item.kind === 'write') {
        const writer = state?.writer;
        if (writer?.token !== item.token || writer.deadline < now) return false;
        writer.deadline = now + item.leaseMs;
        return true;
      }
      const reader = state?.readers.get(item.token);
      if (!reader || reader.deadline < now) return false;
      reader.deadline = now + item.leaseMs;
      return true;
    });
  }

  inspect(prefix: string, key: string): LockInfo {
    return inspectMemory(this, prefix, key);
  }

  forceUnlock(prefix: string, key: string): boolean {
    return forceUnlockMemory(this, prefix, key);
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
  private lastFence(key: string): number {
    let last = this.counters.get(key);
    if (last === undefined) this.counters.set(key, (last = clockMicros()));
    return last;
  }

  /** The next fencing token; a missing counter starts from the clock in microseconds, as nextFence in the scripts. */
  private incr(key: string): number {
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

  private dequeue(queue: QueuedWaiter[], token: string): void {
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
