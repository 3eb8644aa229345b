import { LotteryCluster } from '../../apps/lottery/demo/lottery-cluster';
import { startRedis } from '../harness/redis';
import type { RedisTarget } from '../harness/redis';

/**
 * The lottery with LOTTERY_SCHEDULER=leader: only the elected leader's cron draws; when it
 * stops, another instance leads and draws, and every draw is still recorded exactly once.
 */
describe('the lottery with a leader-run scheduler', () => {
  let redis: RedisTarget;
  let cluster: LotteryCluster;

  beforeAll(async () => {
    redis = await startRedis({ own: true });
    cluster = await LotteryCluster.start({
      redisUrl: redis.url,
      cron: '*/2 * * * * *',
      leaseMs: 3_000,
      scheduler: 'leader',
    });
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
    await redis?.stop();
  });

  it('draws each tick on the leader only; the others let it pass', async () => {
    // The first ticks may come before anyone is elected: wait for one that the leader drew.
    let round = await cluster.scheduledRound();
    for (let i = 0; i < 5 && !round.rows.some((r) => r.action === 'drew'); i++) round = await cluster.scheduledRound();
    expect(round.rows.map((r) => r.action).sort()).toEqual(['drew', 'not leader', 'not leader']);
    expect(round.winners).toHaveLength(10);
    // The same instance leads the next tick too: leadership stays put while its holder lives.
    const leader = round.rows.find((r) => r.action === 'drew')!.instance;
    const next = await cluster.scheduledRound();
    expect(next.rows.find((r) => r.action === 'drew')?.instance).toBe(leader);
  });

  it('hands the draws to another instance when the leader stops, never drawing a tick twice', async () => {
    const before = await cluster.scheduledRound();
    const leader = before.rows.find((r) => r.action === 'drew')!.instance;
    await cluster.instances.find((i) => i.id === leader)!.stop(); // SIGTERM: it resigns
    let round = await cluster.scheduledRound();
    for (let i = 0; i < 5 && !round.rows.some((r) => r.action === 'drew'); i++) {
      expect(round.rows.map((r) => r.action)).toEqual(['not leader', 'not leader']);
      round = await cluster.scheduledRound();
    }
    expect(round.rows.map((r) => r.action).sort()).toEqual(['drew', 'not leader']);
    expect(round.rows.find((r) => r.action === 'drew')!.instance).not.toBe(leader);
    const verification = await cluster.verify();
    expect(verification.problems).toEqual([]);
  });
});
