// Beside the behaviour suite (behaviour-valkey.spec.ts) and the history check (history.spec.ts),
// the contracts that lean hardest on the server's scripting and pub/sub, on Valkey: scheduled
// ticks across processes, a semaphore's limit, and a leadership hand-over. Skipped where
// valkey-server is not installed; npm test says so in one line.
import type { Redis } from 'ioredis';
import { LeadershipRegistry, LockEngine } from 'lockwarden';
import { describeOnValkey, startRedis, uniquePrefix } from '../harness/redis';
import type { RedisTarget } from '../harness/redis';
import { allFired, firedBy, tickInstances } from '../harness/tick-instances';

describeOnValkey('on Valkey', () => {
  describe('@ScheduledLock on a 1 s cron, across processes', () => {
    const { instances, window, runs, observer } = tickInstances('valkey');

    it('runs every tick exactly once, one run at a time, across three instances', async () => {
      const workers = await instances(uniquePrefix('valkey-ticks'), [{}, {}, {}]);
      const ticks = await window(6);
      await allFired(workers, ticks[ticks.length - 1] + 2000);
      const all = await runs();
      const fired = ticks.filter((at) => firedBy(workers, at));
      expect(fired.length).toBeGreaterThanOrEqual(4);
      for (const at of fired) expect([at, all.filter((r) => r.at === at).length]).toEqual([at, 1]);
      expect(Number(await observer().get('peak'))).toBe(1);
    });
  });

  describe('semaphores and leadership', () => {
    let valkey: RedisTarget;
    let admin: Redis;
    const engines: LockEngine[] = [];
    const engine = (keyPrefix: string, instanceId?: string): LockEngine => {
      const e = new LockEngine({ redis: valkey.url, keyPrefix, instanceId, metrics: false, shutdownGraceMs: 1 });
      engines.push(e);
      return e;
    };

    beforeAll(async () => {
      valkey = await startRedis({ server: 'valkey' });
      admin = valkey.client();
    });

    afterAll(async () => {
      await Promise.all(engines.map((e) => e.close()));
      admin.disconnect();
      await valkey.stop();
    });

    it('a semaphore never lets more than its limit in, across 40 flows on two engines', async () => {
      const prefix = uniquePrefix('valkey-sem');
      const [semA, semB] = [engine(prefix), engine(prefix)].map((e) => e.semaphore('pool', { limit: 3 }));
      let inside = 0;
      let peak = 0;
      let done = 0;
      await Promise.all(
        Array.from({ length: 40 }, (_, i) => {
          const permits = i % 4 === 0 ? 2 : 1;
          return (i % 2 ? semA : semB).withPermit(
            async () => {
              inside += permits;
              peak = Math.max(peak, inside);
              await admin.ping(); // a round trip inside: others run meanwhile
              inside -= permits;
              done++;
            },
            { permits, waitMs: 30_000 },
          );
        }),
      );
      expect(done).toBe(40);
      expect(peak).toBeLessThanOrEqual(3);
      expect(peak).toBeGreaterThan(1);
    });

    it('elects one leader at a time: a resign hands over to the waiting candidate, whose term is higher', async () => {
      const prefix = uniquePrefix('valkey-lead');
      const a = new LeadershipRegistry(engine(prefix, 'a')).leadership('jobs');
      const b = new LeadershipRegistry(engine(prefix, 'b')).leadership('jobs');
      await a.campaign();
      const termA = a.currentTerm!;
      let bElected = false;
      const campaignB = b.campaign().then(() => (bElected = true));
      // b is waiting: the lock says a leads.
      expect((await new LeadershipRegistry(engine(prefix, 'o')).leadership('jobs').leader())?.instanceId).toBe('a');
      expect(bElected).toBe(false);
      await a.resign();
      expect(a.signal.aborted).toBe(true);
      await campaignB;
      expect(b.isLeader()).toBe(true);
      expect(b.currentTerm!.fencingToken).toBeGreaterThan(termA.fencingToken);
      await b.resign();
    });
  });
});
