import type { JobScope } from './job-host';
import { iso, message } from './tick-notices';
import type { TickNotices } from './tick-notices';

/**
 * Ticks handed on at shutdown: a tick this instance claimed but will not run, because it
 * began to shut down (or because its claim reached Redis after it gave up on it), is given
 * back; and the job's next holder, on any instance, runs a tick given back so. Kept apart
 * from the run of a tick, which only asks here before and after its own: a given tick passes
 * between instances by its own record in Redis, and runs on another instance's lease.
 */
export class TickHandOn {
  constructor(
    private readonly job: JobScope,
    private readonly notices: TickNotices,
  ) {}

  /**
   * Gives back a tick this instance claimed but will not run, because it began to shut down.
   * Its record goes, so an instance that fires the tick after this runs it; and the job's next
   * holder runs it (runGiven), since the instances whose timers fired before found it taken.
   */
  async giveBack(at: number, pointer: string | undefined): Promise<void> {
    try {
      await this.job.host.ticks.settle(this.job.keys, at, 'given', pointer);
      this.notices.handedOn(at);
    } catch (err) {
      this.notices.lost(at, err);
    }
  }

  /**
   * Gives back a tick whose claim reached Redis only after this instance gave up on it (Redis
   * was unreachable, and the tick was said not to run): as at shutdown, the job's next holder
   * runs it. Never throws.
   */
  async giveBackLate(at: number): Promise<void> {
    const { host, key, keys } = this.job;
    try {
      await host.ticks.settle(keys, at, 'given');
      host.logger.debug(`Tick ${iso(at)} of "${key}" was taken in Redis after this instance gave up on it: handed on.`);
    } catch (err) {
      host.logger.warn(
        `Tick ${iso(at)} of "${key}" was taken in Redis after this instance gave up on it, and could not be ` +
          `handed on (${message(err)}). It is probably lost.`,
      );
    }
  }

  /**
   * Runs a tick another instance gave back while shutting down, this instance holding the
   * job's lock for its own tick `at`: `older` ones before that tick, newer ones after it,
   * each through `run`. A tick an instance claimed since (its timer fired late) is left to
   * it. Never throws: the tick's own outcome is recorded and logged by its run.
   */
  async runGiven(at: number, older: boolean, run: (given: number) => Promise<unknown>): Promise<void> {
    const { host, key, keys, options } = this.job;
    if (host.stopping.aborted) return; // left for the next holder
    try {
      const given = await host.ticks.given(keys);
      if (given === undefined || given === at || given < at !== older) return;
      if (!(await host.ticks.adopt(keys, given))) return;
      if (older && options.onOverrun === 'wait') {
        // Only the newest waiting tick runs: this instance's own tick is newer.
        await host.ticks.settle(keys, given, 'overrun');
        this.notices.overrun(given, undefined, 'a later tick came while it waited, and runs instead');
        return;
      }
      host.logger.debug(
        `"${key}" runs tick ${iso(given)}, which an instance gave back (it was shutting down, or had given up on it).`,
      );
      await run(given);
    } catch (err) {
      host.logger.warn(`Running a tick of "${key}" that another instance handed on failed: ${message(err)}`);
    }
  }
}
