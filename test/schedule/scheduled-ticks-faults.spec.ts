// Scheduled jobs across real processes, under faults: clocks seconds apart, an instance
// SIGKILLed mid-run, one draining slowly, one stopped while it waits to run. What ran is read
// from an observer Redis that only the job's own code writes to, never the library (see
// harness/tick-instances.ts). Split from scheduled-ticks.spec.ts so the two run side by side.
import { uniquePrefix } from '../harness/redis';
import { allFired, firedBy, tickInstances } from '../harness/tick-instances';

const { instances, window, runs, expectEachTickOnce, observer } = tickInstances();

describe('@ScheduledLock on a 1 s cron, across processes, under faults', () => {
  it('names a tick alike on instances whose clocks differ by seconds, and never starts it before its time', async () => {
    const workers = await instances(uniquePrefix('skew'), [{ CLOCK_SKEW_MS: '2500' }, { CLOCK_SKEW_MS: '-2500' }, {}]);
    const all = await expectEachTickOnce(workers, 8, 1000, 4);
    for (const run of all) expect(run.startedAt).toBeGreaterThanOrEqual(run.at);
    expect(workers[0].lines.some((l) => l.includes('ahead of Redis'))).toBe(true);
  });

  it.each([
    ['skip', 'reports the tick cut short and does not run it again'],
    ['run', 'runs the tick cut short again on another instance, with a higher fencing token'],
  ])("onMissed: '%s': after SIGKILL mid-run, %s", async (onMissed) => {
    const prefix = uniquePrefix(`missed-${onMissed}`);
    const [victim] = await instances(prefix, [{ HANG: 'first', LEASE_MS: '1000' }]);
    const cut = Number((await victim.waitFor(/^started (\d+)$/))[1]);
    const [survivor] = await instances(prefix, [{ ON_MISSED: onMissed, LEASE_MS: '1000' }]);
    victim.kill('SIGKILL');
    await victim.exited;

    await survivor.waitFor(new RegExp(`^event missed ${cut}$`));
    const later = (await survivor.waitFor(/^started (\d+)$/)) && survivor.lines.filter((l) => l.startsWith('started '));
    const of = (await runs()).filter((r) => r.at === cut);
    if (onMissed === 'skip') {
      expect(of).toHaveLength(1);
      expect(later.every((l) => Number(l.split(' ')[1]) > cut)).toBe(true);
    } else {
      expect(of).toHaveLength(2);
      expect(of[1]).toMatchObject({ instance: 'i1', catchUp: true });
      expect(of[1].token).toBeGreaterThan(of[0].token);
      expect(later[0]).toBe(`started ${cut}`);
    }
    expect(of[0]).toMatchObject({ instance: 'i1', catchUp: false });
  });

  it('keeps running every tick while one instance shuts down slowly (a rolling deploy): a draining instance takes none', async () => {
    const workers = await instances(uniquePrefix('drain'), [{ SLOW_MS: '6000' }, { SLOW_MS: '6000' }, {}]);
    const slow = await Promise.any(workers.map((w) => w.waitFor(/^slow started$/).then(() => w)));
    const ticks = await window(5);
    slow.kill('SIGTERM'); // drains for up to 30 s: its slow run takes 6 s, its timers keep firing
    const others = workers.filter((w) => w !== slow);
    await allFired(others, ticks[ticks.length - 1] + 1000);

    const all = await runs();
    const fired = ticks.filter((at) => firedBy(others, at));
    expect(fired.length).toBeGreaterThanOrEqual(3);
    for (const at of fired) expect([at, all.filter((r) => r.at === at).length]).toEqual([at, 1]);
    // The draining instance's timers did fire meanwhile, and it ran none of those ticks.
    expect(ticks.some((at) => slow.lines.some((l) => l.startsWith(`fired ${at} `)))).toBe(true);
    const ranBySlow = all.filter((r) => r.instance === `i${workers.indexOf(slow) + 1}` && r.at >= ticks[0]);
    expect(ranBySlow).toEqual([]);
  });

  it("with onOverrun: 'wait', a tick whose waiting instance gets SIGTERM is handed off: the job's holder runs it, once", async () => {
    const prefix = uniquePrefix('hand-off');
    // On a 6 s cron, the holder's first run lasts until the test ends it: the tick after it
    // comes while it goes (and waits), and the waiter, stopped then, hands it off. The run ends
    // once the waiter has exited, however long a loaded machine took for that, and before the
    // tick after (which would supersede the waiting one) unless the exit took seconds.
    const wait = { CRON: '*/6 * * * * *', JOB_MS: '9000', ON_OVERRUN: 'wait' };
    // The holder's clock lags 500 ms, so the other instance always fires first.
    const [holder] = await instances(prefix, [
      { ...wait, CLOCK_SKEW_MS: '-500', NAME: 'holder', FIRST_RUN_UNTIL_PUSH: 'end-first-run' },
    ]);
    const first = Number((await holder.waitFor(/^started (\d+)$/))[1]);
    const [waiter] = await instances(prefix, [{ ...wait, NAME: 'waiter' }]);
    // The next tick the waiter fires while the holder's run goes: the waiter claims it and
    // waits; the holder, firing it later, finds it taken.
    const next = Number((await waiter.waitFor(/^fired (\d+) /))[1]);
    expect(next).toBeGreaterThan(first);
    await waiter.waitFor(/^event waiting job$/);
    await holder.waitFor(new RegExp(`^event skipped ${next}$`));
    waiter.kill('SIGTERM');
    await waiter.exited;
    await observer().rpush('end-first-run', 'go');

    // Nobody else fires that tick again: only the hand-off can run it, before the tick after it.
    await holder.waitFor(new RegExp(`^started (${next}|${next + 6000})$`));
    const all = await runs();
    expect(all.filter((r) => r.at === next)).toEqual([expect.objectContaining({ instance: 'holder' })]);
    expect(all.filter((r) => r.instance === 'waiter')).toEqual([]);
    expect(Number(await observer().get('peak'))).toBe(1);
    // Handed off before its process ended: shutdown waited for the hand-off to reach Redis.
    expect(waiter.lines.some((l) => l.includes('handed it off'))).toBe(true);
    expect(waiter.lines.some((l) => l.startsWith('event missed'))).toBe(false);
  });
});
