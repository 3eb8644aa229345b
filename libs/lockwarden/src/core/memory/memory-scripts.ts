import type { LockInfo } from '../backend/lock-info';
import type { MutexKeys, RwKeys, SemKeys } from '../backend/lock-keys';
import { UNMINTED } from '../backend/lock-store';
import type { RenewItem, StoreAcquire, StoreRwAcquire, StoreSemAcquire } from '../backend/lock-store';
import { grantMessage, WIRE } from '../backend/wire';
import { forceUnlockMemory, inspectMemory } from './memory-inspect';
import { MemoryState } from './memory-state';
import type { QueuedWaiter } from './memory-state';

/**
 * The operations of the Lua scripts (acquire, release, rw-acquire, rw-release, sem-acquire,
 * sem-release, sem-limit, renew, inspect, force-unlock) on the memory backend's data, one
 * JavaScript function each, with the same replies.
 */
export class MemoryScripts extends MemoryState {
  acquire(req: StoreAcquire, instance: string): number {
    const now = performance.now();
    const { keys, ownerToken: token } = req;
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
      // As on Redis: a first plain attempt is a grant without a token, minted on first read.
      const fence = req.fair || req.waited || req.fenced ? this.incr(keys.fence) : UNMINTED;
      this.mutexes.set(keys.lock, { owner: token, fence, instance, expiresAt: now + req.leaseMs });
      if (head) this.dequeue(queue, token);
      return fence;
    }
    if (req.fair) {
      const record = {
        token,
        deadline: now + req.placeMs,
        leaseMs: req.handoffMs,
        waiterId: req.waiterId,
        inbox: req.inbox,
        seq: req.seq,
        instance,
      };
      const place = queue.findIndex((w) => w.token === token);
      if (place >= 0) queue[place] = record;
      else queue.push(record);
      if (!held) return -Math.max(1, Math.ceil(head!.deadline - now));
    }
    return -Math.max(1, Math.ceil(held ? held.expiresAt - now : 1));
  }

  /** fence-mint.lua: the holder's token, minted now if its grant took none; 0 when it holds nothing. */
  mint(keys: MutexKeys, ownerToken: string): number {
    const held = this.liveMutex(keys.lock, performance.now());
    if (held?.owner !== ownerToken) return 0;
    if (held.fence === UNMINTED) held.fence = this.incr(keys.fence);
    return held.fence;
  }

  release(keys: MutexKeys, ownerToken: string): boolean {
    const now = performance.now();
    const held = this.liveMutex(keys.lock, now);
    const queue = this.queue(keys.queue);
    if (held?.owner !== ownerToken) {
      this.dequeue(queue, ownerToken);
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
        this.publish(`${keys.channel}:${next.inbox}`, grantMessage(next.waiterId, fence, next.leaseMs, next.seq));
        return true;
      }
    }
    this.publish(keys.channel, WIRE.released);
    return true;
  }

  rwAcquire(req: StoreRwAcquire, instance: string): number {
    const now = performance.now();
    const { keys, ownerToken: token } = req;
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
    if (req.kind === 'read') {
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
    writers.set(token, now + req.placeMs);
    return -Math.max(1, Math.ceil(latest - now));
  }

  rwRelease(keys: RwKeys, ownerToken: string, kind: 'read' | 'write'): boolean {
    const state = this.rwState(keys.lock);
    const writers = this.writers(keys.writers);
    if (kind === 'write') {
      if (state.writer?.token !== ownerToken) {
        writers.delete(ownerToken);
        return false;
      }
      state.writer = undefined;
      this.publish(keys.channel, WIRE.rwChanged);
      return true;
    }
    if (!state.readers.delete(ownerToken)) return false;
    const now = performance.now();
    for (const r of state.readers.values()) if (r.deadline >= now) return true;
    if (writers.size > 0) this.publish(keys.channel, WIRE.rwChanged);
    return true;
  }

  semAcquire(req: StoreSemAcquire, instance: string): number {
    const now = performance.now();
    const state = this.semState(req.keys.lock);
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
      const fence = this.incr(req.keys.fence);
      state.holders.set(req.ownerToken, { deadline: now + req.leaseMs, permits: req.permits, fence, instance });
      return fence;
    }
    return -Math.max(1, Math.ceil(earliest === Infinity ? req.leaseMs : earliest - now));
  }

  semRelease(keys: SemKeys, ownerToken: string): boolean {
    const state = this.semState(keys.lock);
    const held = state.holders.get(ownerToken);
    if (!held) return false;
    state.holders.delete(ownerToken);
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
        const holder = this.semaphores.get(item.redisKey)?.holders.get(item.ownerToken);
        if (!holder || holder.deadline < now) return false;
        holder.deadline = now + item.leaseMs;
        return true;
      }
      if (item.kind === 'mutex') {
        const held = this.liveMutex(item.redisKey, now);
        if (held?.owner !== item.ownerToken) return false;
        held.expiresAt = now + item.leaseMs;
        return true;
      }
      const state = this.rw.get(item.redisKey);
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

  inspect(prefix: string, key: string): LockInfo {
    return inspectMemory(this, prefix, key);
  }

  forceUnlock(prefix: string, key: string): boolean {
    return forceUnlockMemory(this, prefix, key);
  }
}
