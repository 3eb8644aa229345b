// Scheduled jobs across real processes: every tick runs once, whatever each instance's
// timer does, and a run that outlasts its tick never overlaps the next. What ran is read
// from an observer Redis that only the job's own code writes to, never the library (see
// harness/tick-instances.ts). Clock skew, crashes and shutdowns: scheduled-ticks-faults.spec.ts.
import { uniquePrefix } from '../harness/redis';
import { allFired, eventsOf, firedBy, tickInstances } from '../harness/tick-instances';

const { instances, window, runs, expectEachTickOnce, observer } = tickInstances();

describe('@ScheduledLock on a 1 s cron, across processes', () => {
  it('runs every tick exactly once with defaults, while one instance fires every tick late', async () => {
    const workers = await instances(uniquePrefix('ticks'), [{ BLOCK_MS: '450' }, {}, {}]);
    await expectEachTickOnce(workers, 10, 2000, 5);
    expect(Number(await observer().get('peak'))).toBe(1);
    // The fault was there: the blocked instance's timers fired late, and it found those ticks taken.
    const late = workers[0].lines.filter((l) => /^fired \d+ late (\d+)$/.exec(l) && Number(l.split(' ')[3]) >= 250);
    expect(late.length).toBeGreaterThan(0);
    expect(workers[0].lines.some((l) => l.startsWith('event skipped '))).toBe(true);
  });

  it('never runs two at once when a run (2.5 s) outlasts its tick: later ticks are skipped as overruns, each once', async () => {
    const workers = await instances(uniquePrefix('overrun'), [{ JOB_MS: '2500' }, { JOB_MS: '2500' }]);
    const ticks = await window(8);
    await allFired(workers, ticks[ticks.length - 1] + 1000);

    const all = await runs();
    expect(Number(await observer().get('peak'))).toBe(1);
    let overruns = 0;
    for (const at of ticks.filter((t) => firedBy(workers, t))) {
      const ran = all.filter((r) => r.at === at).length;
      const skipped = eventsOf(workers, 'overrun', at);
      overruns += skipped;
      expect([at, ran + skipped]).toEqual([at, 1]);
    }
    expect(overruns).toBeGreaterThan(0);
  });

  it("with onOverrun: 'wait', runs the newest waiting tick once the previous run ends, never two at once", async () => {
    const env = { JOB_MS: '2500', ON_OVERRUN: 'wait' };
    const workers = await instances(uniquePrefix('overrun-wait'), [env, env]);
    const ticks = await window(8);
    await allFired(workers, ticks[ticks.length - 1] + 1000);

    const all = await runs();
    expect(Number(await observer().get('peak'))).toBe(1);
    const decided = ticks.filter((t) => firedBy(workers, t) && t < ticks[ticks.length - 1] - 3000);
    for (const at of decided) {
      expect([at, all.filter((r) => r.at === at).length + eventsOf(workers, 'overrun', at)]).toEqual([at, 1]);
    }
    // A tick that came while the run before it went did run, after that run ended.
    const ended = (await observer().lrange('ended', 0, -1)).map(
      (l) => JSON.parse(l) as { at: number; endedAt: number },
    );
    const waited = all.filter((r) => ended.some((e) => e.at < r.at && r.at < e.endedAt && e.endedAt <= r.startedAt));
    expect(waited.length).toBeGreaterThan(0);
    expect(workers.some((w) => w.lines.some((l) => l.startsWith('event overrun ')))).toBe(true);
  });
});
