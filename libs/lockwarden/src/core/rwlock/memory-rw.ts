import type { RwKeys } from '../backend/lock-keys';
import type { StoreRwAcquire } from '../backend/lock-store';
import { WIRE } from '../backend/wire';
import type { MemoryState } from '../memory/memory-state';

// The read/write lock's part of the in-memory store: what rw-acquire.lua and rw-release.lua do,
// on the memory backend's data, with the same replies.

export function rwAcquireMemory(b: MemoryState, req: StoreRwAcquire, instance: string): number {
  const now = performance.now();
  const { keys, ownerToken: token } = req;
  const state = b.rwState(keys.lock);
  let latest = now;
  for (const [t, r] of state.readers) {
    if (r.deadline < now) state.readers.delete(t);
    else latest = Math.max(latest, r.deadline);
  }
  if (state.writer && state.writer.deadline < now) state.writer = undefined;
  const writer = state.writer;
  if (writer) latest = Math.max(latest, writer.deadline);
  const writers = b.writers(keys.writers);
  if (req.kind === 'read') {
    if (state.readers.has(token)) return b.counters.get(keys.fence) ?? 0;
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
    return b.lastFence(keys.fence);
  }
  if (writer?.token === token) return writer.fence;
  if (!writer && state.readers.size === 0) {
    const fence = b.incr(keys.fence);
    state.writer = { token, deadline: now + req.leaseMs, fence, instance };
    writers.delete(token);
    return fence;
  }
  writers.set(token, now + req.placeMs);
  return -Math.max(1, Math.ceil(latest - now));
}
export function rwReleaseMemory(b: MemoryState, keys: RwKeys, ownerToken: string, kind: 'read' | 'write'): boolean {
  const state = b.rwState(keys.lock);
  const writers = b.writers(keys.writers);
  if (kind === 'write') {
    if (state.writer?.token !== ownerToken) {
      writers.delete(ownerToken);
      return false;
    }
    state.writer = undefined;
    b.publish(keys.channel, WIRE.rwChanged);
    return true;
  }
  if (!state.readers.delete(ownerToken)) return false;
  const now = performance.now();
  for (const r of state.readers.values()) if (r.deadline >= now) return true;
  if (writers.size > 0) b.publish(keys.channel, WIRE.rwChanged);
  return true;
}
