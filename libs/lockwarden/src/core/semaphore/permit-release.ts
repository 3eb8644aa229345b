import type { Lease } from '../lease/lease';
import type { SemKeys } from '../backend/lock-keys';
import type { LockStore } from '../backend/lock-store';
import type { BusWaiter } from '../backend/wake-bus';

/**
 * How many times in a row a release hands permits off to a waiter of its own process (see
 * releasePermits) before it gives them back to everyone.
 */
export const MAX_HANDOFFS = 16;

/**
 * Gives a holder's permits back, handing them off straight to a waiter of this process when one
 * is parked (`handOffTarget` claims it): one script instead of a release, a wake-up and an
 * attempt that a new caller here would usually beat to the permits. After MAX_HANDOFFS hand-offs
 * in a row the permits are released to everyone, so waiters in other processes get their turn.
 */
export async function releasePermits(
  store: LockStore,
  lease: Lease,
  keys: SemKeys,
  handOffTarget: ((channel: string) => BusWaiter | undefined) | undefined,
): Promise<boolean> {
  const to = lease.handOffs < MAX_HANDOFFS ? handOffTarget?.(keys.channel) : undefined;
  if (!to?.handOff) return store.semRelease(keys, lease.ownerToken);
  const sentAt = performance.now();
  let reply: { released: boolean; fencingToken: number };
  try {
    reply = await store.semHandOff(keys, lease.ownerToken, to.handOff);
  } catch (err) {
    to.claimed = false;
    to.wake(); // it tries by itself; a hand-off that did land is found by its attempt
    throw err;
  }
  if (reply.fencingToken > 0) {
    to.takeHandOff(reply.fencingToken, sentAt, lease.handOffs + 1);
  } else {
    // Its ask did not fit: the permits were announced while it was claimed, so tell it too.
    to.claimed = false;
    to.wake();
  }
  return reply.released;
}
