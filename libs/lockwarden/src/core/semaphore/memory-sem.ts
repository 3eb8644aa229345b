import type { SemKeys } from '../backend/lock-keys';
import type { StoreSemAcquire } from '../backend/lock-store';
import { WIRE } from '../backend/wire';
import type { MemoryState } from '../memory/memory-state';

// The semaphore's part of the in-memory store: what sem-acquire.lua, sem-release.lua,
// sem-inspect.lua and sem-limit.lua do, on the memory backend's data, with the same replies.

export function semAcquireMemory(b: MemoryState, req: StoreSemAcquire, instance: string): number {
  const now = performance.now();
  const state = b.semState(req.keys.lock);
  for (const [t, h] of state.holders) if (h.deadline < now) state.holders.delete(t);
  const mine = state.holders.get(req.ownerToken);
  if (mine) return mine.fence;
  state.limit ??= req.initialLimit;
  let used = 0;
  let earliest = Infinity;
  for (const h of state.holders.values()) {
    used += h.permits;
    earliest = Math.min(earliest, h.deadline);
  }
  if (used + req.permits <= state.limit) {
    const fence = b.incr(req.keys.fence);
    state.holders.set(req.ownerToken, { deadline: now + req.leaseMs, permits: req.permits, fence, instance });
    return fence;
  }
  return -Math.max(1, Math.ceil(earliest === Infinity ? req.leaseMs : earliest - now));
}
export function semReleaseMemory(b: MemoryState, keys: SemKeys, ownerToken: string): boolean {
  const state = b.semState(keys.lock);
  const held = state.holders.get(ownerToken);
  if (!held) return false;
  state.holders.delete(ownerToken);
  b.publish(keys.channel, WIRE.rwChanged);
  return held.deadline >= performance.now();
}
/** sem-inspect.lua's reply: limit (-1: none), last fence, then instance, permits, ms left per live holder. */
export function semInspectMemory(b: MemoryState, keys: SemKeys): (string | number)[] {
  const now = performance.now();
  const state = b.semaphores.get(keys.lock);
  const out: (string | number)[] = [state?.limit ?? -1, String(b.counters.get(keys.fence) ?? 0)];
  for (const h of state?.holders.values() ?? []) {
    if (h.deadline >= now) out.push(h.instance, h.permits, Math.ceil(h.deadline - now));
  }
  return out;
}
export function semLimitMemory(b: MemoryState, keys: SemKeys, limit: number): number {
  const state = b.semState(keys.lock);
  const old = state.limit ?? 0;
  state.limit = limit;
  if (limit > old) b.publish(keys.channel, WIRE.rwChanged);
  return old;
}
