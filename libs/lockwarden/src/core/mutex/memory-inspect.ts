import { lockHolder } from '../backend/lock-info';
import type { LockInfo } from '../backend/lock-info';
import { mutexKeys, rwKeys } from '../backend/lock-keys';
import type { MemoryState } from '../memory/memory-state';
import { WIRE } from '../backend/wire';

/** The in-memory twin of inspect.lua: one key's mutex or read/write state, never an owner token. */
export function inspectMemory(b: MemoryState, prefix: string, key: string): LockInfo {
  const now = performance.now();
  const m = mutexKeys(prefix, key);
  const r = rwKeys(prefix, key);
  const remaining = (deadline: number) => Math.max(0, Math.round(deadline - now));
  const held = b.liveMutex(m.lock, now);
  if (held) {
    const leaseLeftMs = remaining(held.expiresAt);
    return {
      key,
      held: true,
      kind: 'mutex',
      holders: [lockHolder(held.instance, leaseLeftMs)],
      leaseLeftMs,
      fencingToken: held.fence || null,
      waiters: b.queue(m.queue).length,
    };
  }
  const state = b.rwState(r.lock);
  const waitingWriters = b.writers(r.writers).size;
  const writer = state.writer && state.writer.deadline >= now ? state.writer : undefined;
  if (writer) {
    const leaseLeftMs = remaining(writer.deadline);
    const holders = [lockHolder(writer.instance, leaseLeftMs)];
    return {
      key,
      held: true,
      kind: 'write',
      holders,
      leaseLeftMs,
      fencingToken: writer.fence,
      waiters: waitingWriters,
    };
  }
  const readers = [...state.readers.values()].filter((x) => x.deadline >= now);
  if (readers.length > 0) {
    const holders = readers.map((x) => lockHolder(x.instance, remaining(x.deadline)));
    const leaseLeftMs = Math.max(...holders.map((h) => h.leaseLeftMs));
    return {
      key,
      held: true,
      kind: 'read',
      holders,
      leaseLeftMs,
      fencingToken: b.counters.get(r.fence) ?? null,
      waiters: waitingWriters,
    };
  }
  const waiters = waitingWriters + b.queue(m.queue).length;
  return {
    key,
    held: false,
    kind: null,
    holders: [],
    leaseLeftMs: 0,
    fencingToken: b.counters.get(m.fence) ?? null,
    waiters,
  };
}

/** The in-memory twin of force-unlock.lua. */
export function forceUnlockMemory(b: MemoryState, prefix: string, key: string): boolean {
  const m = mutexKeys(prefix, key);
  const r = rwKeys(prefix, key);
  const now = performance.now();
  const state = b.rw.get(r.lock);
  const rwHeld =
    state !== undefined &&
    ((state.writer !== undefined && state.writer.deadline >= now) ||
      [...state.readers.values()].some((x) => x.deadline >= now));
  const removed = (b.liveMutex(m.lock, now) ? 1 : 0) + (rwHeld ? 1 : 0);
  b.mutexes.delete(m.lock);
  b.queues.delete(m.queue);
  b.rw.delete(r.lock);
  b.waitingWriters.delete(r.writers);
  b.publish(m.channel, WIRE.released);
  b.publish(r.channel, WIRE.rwChanged);
  return removed > 0;
}
