import type { AcquireOptions, LockEngine, LockHandle } from 'lockwarden/core';
import type { EventLog } from './event-log';

/**
 * The order in which waiters for `held`'s lock are granted it once `held` is released:
 * `count` waiters, taking turns among `engines`, each in line (its `waiting` event told, then
 * `inLine(i)` if given) before the next one asks, and each releasing as soon as it is granted.
 */
export async function grantOrder(
  events: EventLog,
  held: LockHandle,
  engines: readonly Pick<LockEngine, 'acquire'>[],
  count: number,
  options: AcquireOptions,
  inLine?: (i: number) => Promise<unknown>,
): Promise<number[]> {
  const order: number[] = [];
  const waiters: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const parked = events.next({ type: 'waiting', key: held.key });
    waiters.push(
      engines[i % engines.length].acquire(held.key, options).then(async (lock) => {
        order.push(i);
        await lock.release();
      }),
    );
    await parked;
    await inLine?.(i);
  }
  await held.release();
  await Promise.all(waiters);
  return order;
}
