import { LockTimeoutError } from 'lockwarden/errors';
import { mutexKeys } from '../../libs/lockwarden/src/core/backend/lock-keys';
import { EventLog } from '../harness/event-log';
import { engineFactory } from '../harness/engines';
import { redisForFile, uniquePrefix } from '../harness/redis';

// The subscriber connection of waiting acquires comes back after a cut, subscribes again by
// the library's own hand (ioredis's resubscription, whose failure nothing handles, is off),
// and the waiters on it hear releases again.
const server = redisForFile({ own: true });
const { engine } = engineFactory(() => server.redis.url, 'resubscribe');

/**
 * How many subscriptions there are to the inboxes of a lock's channel (`<channel>:<inbox>`,
 * one per engine with a waiter), by Redis's own count.
 */
async function subscribers(channel: string): Promise<number> {
  const inboxes = (await server.admin.pubsub('CHANNELS', `${channel}:*`)) as string[];
  if (inboxes.length === 0) return 0;
  const counts = (await server.admin.pubsub('NUMSUB', ...inboxes)) as (string | number)[];
  return counts.filter((_, i) => i % 2 === 1).reduce<number>((sum, n) => sum + Number(n), 0);
}

describe('the wake-up subscriber after its connection was cut', () => {
  it('subscribes again, and a parked waiter hears the release, long before the holder lease', async () => {
    const keyPrefix = uniquePrefix('resubscribe');
    const events = new EventLog();
    const holderEngine = engine({ keyPrefix });
    // A place this long is renewed every 30 s: past the wait, so the wait cannot end by a check-back.
    const waiterEngine = engine({ keyPrefix, placeMs: 100_000 }, events);
    const channel = mutexKeys(keyPrefix, 'k').channel;
    const holder = await holderEngine.acquire('k', { leaseMs: 60_000 });
    // A release heard by pub/sub is the only way in before this wait ends: the lease is longer.
    const parked = events.next({ type: 'waiting', key: 'k' });
    const waiting = waiterEngine.acquire('k', { waitMs: 20_000 });
    await parked;
    expect(await subscribers(channel)).toBe(1);
    await server.admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    // Back and subscribed again: a condition Redis reports, polled, not a time.
    while ((await subscribers(channel)) !== 1) await new Promise((r) => setTimeout(r, 10));
    await holder.release();
    const got = await waiting.catch((err: unknown) => err);
    expect(got).not.toBeInstanceOf(LockTimeoutError);
    expect(got).toHaveProperty('key', 'k');
    await (got as { release(): Promise<unknown> }).release();
  });
});
