import type { MutexKeys } from '../backend/lock-keys';
import { UNMINTED } from '../backend/lock-store';
import type { StoreAcquire } from '../backend/lock-store';
import { grantMessage, WIRE } from '../backend/wire';
import type { MemoryState, QueuedWaiter } from '../memory/memory-state';

// The mutex's part of the in-memory store: what acquire.lua, fence-mint.lua and release.lua do,
// on the memory backend's data, with the same replies.

export function acquireMemory(b: MemoryState, req: StoreAcquire, instance: string): number {
  const now = performance.now();
  const { keys, ownerToken: token } = req;
  const held = b.liveMutex(keys.lock, now);
  if (held?.owner === token) {
    held.expiresAt = now + req.leaseMs; // a handed-off lock, confirmed: its full lease starts now
    return held.fence;
  }
  let head: QueuedWaiter | undefined;
  const queue = b.queue(keys.queue);
  if (req.fair) {
    while (queue.length > 0 && queue[0].deadline < now) queue.shift();
    head = queue[0];
  }
  if (!held && (!head || head.token === token)) {
    // As on Redis: a first plain attempt is a grant without a token, minted on first read.
    const fence = req.fair || req.waited || req.fenced ? b.incr(keys.fence) : UNMINTED;
    b.mutexes.set(keys.lock, { owner: token, fence, instance, expiresAt: now + req.leaseMs });
    if (head) b.dequeue(queue, token);
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
export function mintMemory(b: MemoryState, keys: MutexKeys, ownerToken: string): number {
  const held = b.liveMutex(keys.lock, performance.now());
  if (held?.owner !== ownerToken) return 0;
  if (held.fence === UNMINTED) held.fence = b.incr(keys.fence);
  return held.fence;
}
export function releaseMemory(b: MemoryState, keys: MutexKeys, ownerToken: string): boolean {
  const now = performance.now();
  const held = b.liveMutex(keys.lock, now);
  const queue = b.queue(keys.queue);
  if (held?.owner !== ownerToken) {
    b.dequeue(queue, ownerToken);
    return false;
  }
  b.mutexes.delete(keys.lock);
  while (queue.length > 0) {
    const next = queue.shift()!;
    if (next.deadline >= now) {
      // Hand-off: the waiter owns the lock before it hears about it.
      const fence = b.incr(keys.fence);
      b.mutexes.set(keys.lock, {
        owner: next.token,
        fence,
        instance: next.instance,
        expiresAt: now + next.leaseMs,
      });
      b.publish(`${keys.channel}:${next.inbox}`, grantMessage(next.waiterId, fence, next.leaseMs, next.seq));
      return true;
    }
  }
  b.publish(keys.channel, WIRE.released);
  return true;
}
