import { EventLog } from '../harness/event-log';
import { clusterForFile } from '../harness/redis-cluster';
import { engineFactory } from '../harness/engines';

/** Semaphores on a 3-master Redis Cluster: one slot per semaphore, sharded pub/sub, per-slot renewal batches. */
const nodes = clusterForFile({ masters: 3 });
const factory = engineFactory(nodes.where, 'sem-cluster');
// Tests end with permits still held: a short grace keeps each engine's close from waiting on them.
const pair: typeof factory.pair = (options = {}, events) => factory.pair({ shutdownGraceMs: 1, ...options }, events);

it('keeps each of 8 semaphores (spread over the masters) to its limit, renewing and waking across slots', async () => {
  const events = new EventLog();
  const [a, b] = pair({}, events);
  const names = Array.from({ length: 8 }, (_, i) => `sem-${i}`);
  const slots = new Set(
    await Promise.all(names.map(async (n) => String(await nodes.admin.cluster('KEYSLOT', `{${n}}`)))),
  );
  expect(slots.size).toBeGreaterThan(1);
  // Held across renewals on every slot at once, while the flows below contend for the rest.
  // Leases short enough to be renewed several times here, long enough that a loaded machine's
  // late timers do not let one lapse (then a second flow could rightly enter).
  const long = await Promise.all(names.map((n) => a.semaphore(n, { limit: 2 }).acquire({ leaseMs: 3_000 })));
  await events.next({ type: 'renewed' }, names.length * 4);
  const inside = new Map<string, number>();
  const max = new Map<string, number>();
  await Promise.all(
    names.flatMap((n) =>
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 ? a : b).semaphore(n, { limit: 2 }).withPermit(
          async () => {
            inside.set(n, (inside.get(n) ?? 0) + 1);
            max.set(n, Math.max(max.get(n) ?? 0, inside.get(n)!));
            await nodes.admin.get(`{${n}}probe`);
            inside.set(n, inside.get(n)! - 1);
          },
          { waitMs: 30_000 },
        ),
      ),
    ),
  );
  // One permit of each stayed with its long holder, so the flows ran one at a time.
  for (const h of long) expect(h.isHeld()).toBe(true);
  for (const n of names) expect(max.get(n)).toBe(1);
  await Promise.all(long.map((h) => h.release()));
});
