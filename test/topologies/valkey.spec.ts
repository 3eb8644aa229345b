// Beside the behaviour suite and the history check on Valkey (cells of npm run test:matrix),
// the contracts that lean hardest on the server's scripting and pub/sub, on Valkey: scheduled
// ticks across processes, a semaphore's limit, and a leadership hand-off. Skipped where
// valkey-server is not installed; npm test says so in one line.
import { LeadershipRegistry, LockEngine } from 'lockwarden/core';
import { engineFactory } from '../harness/engines';
import { permitsAtOnce } from '../harness/permits';
import { describeOnValkey, redisForFile, uniquePrefix } from '../harness/redis';
import { tickInstances } from '../harness/tick-instances';

describeOnValkey('on Valkey', () => {
  describe('@ScheduledLock on a 1 s cron, across processes', () => {
    const { instances, expectEachTickOnce, observer } = tickInstances('valkey');

    it('runs every tick exactly once, one run at a time, across three instances', async () => {
      const workers = await instances(uniquePrefix('valkey-ticks'), [{}, {}, {}]);
      await expectEachTickOnce(workers, 6, 2000, 4);
      expect(Number(await observer().get('peak'))).toBe(1);
    });
  });

  describe('semaphores and leadership', () => {
    const valkey = redisForFile({ server: 'valkey' });
    const factory = engineFactory(() => valkey.redis.url, 'valkey');
    const engine = (keyPrefix: string, instanceId?: string): LockEngine =>
      factory.engine({ keyPrefix, instanceId, metrics: false, shutdownGraceMs: 1 });

    it('a semaphore never lets more than its limit in, across 40 flows on two engines', async () => {
      const prefix = uniquePrefix('valkey-sem');
      const [semA, semB] = [engine(prefix), engine(prefix)].map((e) => e.semaphore('pool', { limit: 3 }));
      const { peak, done } = await permitsAtOnce([semB, semA], 40, () => valkey.admin.ping());
      expect(done).toBe(40);
      expect(peak).toBeLessThanOrEqual(3);
      expect(peak).toBeGreaterThan(1);
    });

    it('elects one leader at a time: a resign hands off to the waiting candidate, whose term is higher', async () => {
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
