import type { JobScope } from './job-host';
import { iso, message } from './tick-notices';
import type { TickNotices } from './tick-notices';

/**
 * Ticks handed off at shutdown: a tick this instance claimed but will not run, because it
 * began to shut down (or because its claim reached Redis after it gave up on it), is handed
 * off; and the job's next holder, on any instance, runs a tick handed off so. Kept apart
 * from the run of a tick, which only asks here before and after its own: a handed-off tick
 * goes between instances by its own record in Redis, and runs on another instance's lease.
 */
export class TickHandOff {
  constructor(
    private readonly job: JobScope,
    private readonly notices: TickNotices,
  ) {}

  /**
   * Hands off a tick this instance claimed but will not run, because it began to shut down.
   * Its record goes, so an instance that fires the tick after this runs it; and the job's next
   * holder runs it (runHandedOff), since the instances whose timers fired before found it taken.
   */
  async handOff(at: number, pointer: string | undefined): Promise<void> {
    try {
      await this.job.host.ticks.settle(this.job.keys, at, 'handed-off', pointer);
      this.notices.handedOff(at);
    } catch (err) {
      this.notices.lost(at, err);
    }
  }

  /**
   * Hands off a tick whose claim reached Redis only after this instance gave up on it (Redis
   * was unreachable, and the tick was said not to run): as at shutdown, the job's next holder
   * runs it. Never throws.
   */
  async handOffLate(at: number): Promise<void> {
    const { host, key, keys } = this.job;
    try {
      await host.ticks.settle(keys, at, 'handed-off');
      host.logger.debug(
        `Tick ${iso(at)} of "${key}" was taken in Redis after this instance gave up on it: handed off.`,
      );
    } catch (err) {
      host.logger.warn(
        `Tick ${iso(at)} of "${key}" was taken in Redis after this instance gave up on it, and could not be ` +
          `handed off (${message(err)}). It is probably lost.`,
      );
    }
  }

  /**
   * Runs a tick another instance handed off while shutting down, this instance holding the
   * job's lock for its own tick `at`: `older` ones before that tick, newer ones after it,
   * each through `run`. A tick an instance claimed since (its timer fired late) is left to
   * it. Never throws: the tick's own outcome is recorded and logged by its run.
   */
  async runHandedOff(at: number, older: boolean, run: (tick: number) => Promise<unknown>): Promise<void> {
    const { host, key, keys, options } = this.job;
    if (host.stopping.aborted) return; // left for the next holder
    try {
      const tick = await host.ticks.handedOff(keys);
      if (tick === undefined || tick === at || tick < at !== older) return;
      if (!(await host.ticks.adopt(keys, tick))) return;
      if (older && options.onOverrun === 'wait') {
        // Only the newest waiting tick runs: this instance's own tick is newer.
        await host.ticks.settle(keys, tick, 'overrun');
        this.notices.overrun(tick, undefined, 'a later tick came while it waited, and runs instead');
        return;
      }
      host.logger.debug(
        `"${key}" runs tick ${iso(tick)}, which an instance handed off (it was shutting down, or had given up on it).`,
      );
      await run(tick);
    } catch (err) {
      host.logger.warn(`Running a tick of "${key}" that another instance handed off failed: ${message(err)}`);
    }
  }
}
