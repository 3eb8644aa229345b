import type { RenewItem } from '../backend/lock-store';
import type { MemoryState } from './memory-state';

// What renew.lua does for every kind of lease, on the memory backend's data.

export function renewMemory(b: MemoryState, items: readonly RenewItem[]): boolean[] {
  const now = performance.now();
  return items.map((item) => {
    if (item.kind === 'permit') {
      const holder = b.semaphores.get(item.redisKey)?.holders.get(item.ownerToken);
      if (!holder || holder.deadline < now) return false;
      holder.deadline = now + item.leaseMs;
      return true;
    }
    if (item.kind === 'mutex') {
      const held = b.liveMutex(item.redisKey, now);
      if (held?.owner !== item.ownerToken) return false;
      held.expiresAt = now + item.leaseMs;
      return true;
    }
    const state = b.rw.get(item.redisKey);
    if (item.kind === 'write') {
      const writer = state?.writer;
      if (writer?.token !== item.ownerToken || writer.deadline < now) return false;
      writer.deadline = now + item.leaseMs;
      return true;
    }
    const reader = state?.readers.get(item.ownerToken);
    if (!reader || reader.deadline < now) return false;
    reader.deadline = now + item.leaseMs;
    return true;
  });
}
