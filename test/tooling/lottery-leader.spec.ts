import { lotteryForFile } from '../harness/lottery';

/**
 * The lottery with LOTTERY_SCHEDULER=leader: only the elected leader's cron draws; when it
 * stops, another instance leads and draws, and every draw is still recorded exactly once.
 */
describe('the lottery with a leader-run scheduler', () => {
  const lottery = lotteryForFile({
    cron: '*/2 * * * * *',
    leaseMs: 3_000,
    scheduler: 'leader',
  });

  it('draws each tick on the leader only; the others let it pass', async () => {
    // The first ticks may come before anyone is elected: wait for one that the leader drew.
    let round = await lottery.cluster.scheduledRound();
    for (let i = 0; i < 5 && !round.rows.some((r) => r.action === 'drew'); i++)
      round = await lottery.cluster.scheduledRound();
    expect(round.rows.map((r) => r.action).sort()).toEqual(['drew', 'not leader', 'not leader']);
    expect(round.winners).toHaveLength(10);
    // The same instance leads the next tick too: leadership stays put while its holder lives.
    const leader = round.rows.find((r) => r.action === 'drew')!.instance;
    const next = await lottery.cluster.scheduledRound();
    expect(next.rows.find((r) => r.action === 'drew')?.instance).toBe(leader);
  });

  it('hands the draws to another instance when the leader stops, never drawing a tick twice', async () => {
    const before = await lottery.cluster.scheduledRound();
    const leader = before.rows.find((r) => r.action === 'drew')!.instance;
    await lottery.cluster.instances.find((i) => i.id === leader)!.stop(); // SIGTERM: it resigns
    let round = await lottery.cluster.scheduledRound();
    for (let i = 0; i < 5 && !round.rows.some((r) => r.action === 'drew'); i++) {
      // Nobody draws until the new leader does. Under load its first draw can outlast the 2 s
      // period: it answers the next tick "overrun" while it draws, and that tick's round may
      // be complete before the tick it is drawing.
      expect(round.rows.every((r) => r.action === 'not leader' || r.action === 'overrun')).toBe(true);
      round = await lottery.cluster.scheduledRound();
    }
    expect(round.rows.map((r) => r.action).sort()).toEqual(['drew', 'not leader']);
    expect(round.rows.find((r) => r.action === 'drew')!.instance).not.toBe(leader);
    const verification = await lottery.cluster.verify();
    expect(verification.problems).toEqual([]);
  });
});
