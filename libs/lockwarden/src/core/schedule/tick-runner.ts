import type { LockHandle } from '../lease/lock-handle';
import { askStore } from './job-host';
import type { JobScope } from './job-host';
import { runAsTick } from './tick-context';
import type { TickHandOff } from './tick-hand-off';
import { iso, message } from './tick-notices';
import type { TickNotices } from './tick-notices';

/**
 * The run of a tick this instance claimed, holding the job's lock: it names the tick in the
 * job's run pointer, first runs again a tick whose run never finished (`onMissed: 'run'`),
 * runs the method as the tick, and records how it ended. Kept apart from deciding a tick
 * (scheduled-job.ts): everything here happens under the job's lock, once the tick is this
 * instance's to run.
 */
export class TickRunner {
  constructor(
    private readonly job: JobScope,
    private readonly notices: TickNotices,
    private readonly handOffs: TickHandOff,
  ) {}

  /** Runs tick `at` under `handle`, with the ticks handed off around it (see TickHandOff.runHandedOff). */
  async run<T>(at: number, handle: LockHandle, keepMs: number, fn: () => Promise<T>): Promise<T | undefined> {
    const { host, key, keys, schedule, options } = this.job;
    const runHandedOff = (tick: number): Promise<T | undefined> => this.run(tick, handle, keepMs, fn);
    await this.handOffs.runHandedOff(at, true, runHandedOff);
    // The tick record is stamped with the holder's token: minted here when the grant took none.
    const token = await handle.fencingToken();
    const runKeepMs = keepMs + (options.acquire.leaseMs ?? host.leaseMs);
    const next = options.onOverrun === 'wait' ? schedule.after(at) : undefined;
    const started = await askStore(this.job, 'start a tick of', host.ticks.start(keys, at, token, runKeepMs, next));
    if (started.superseded) {
      this.notices.overrun(at, undefined, 'a later tick came while it waited, and runs instead');
      return undefined;
    }
    let pointer = started.pointer;
    if (started.found && started.found.at !== at) {
      const missed = started.found;
      const again = options.onMissed === 'run';
      this.notices.missed(at, missed, again);
      if (again) {
        const rerun = await askStore(this.job, 'start a tick of', host.ticks.start(keys, missed.at, token, runKeepMs));
        await this.execute(missed.at, rerun.pointer, token, true, fn).catch((err: unknown) => {
          host.logger.warn(`Catching up tick ${iso(missed.at)} of "${key}" failed: ${message(err)}`);
        });
        const resumed = host.ticks.start(keys, at, token, runKeepMs);
        pointer = (await askStore(this.job, 'start a tick of', resumed)).pointer;
      }
    }
    if (host.stopping.aborted) {
      // Shutdown began while this run was getting ready (or catching up): nothing new starts.
      await this.handOffs.handOff(at, pointer);
      return undefined;
    }
    try {
      return await this.execute(at, pointer, token, false, fn);
    } finally {
      await this.handOffs.runHandedOff(at, false, runHandedOff);
    }
  }

  /** Runs `fn` as tick `at`, then records how it ended; a failing record never hides fn's own outcome. */
  private async execute<T>(
    at: number,
    pointer: string,
    token: number,
    catchUp: boolean,
    fn: () => Promise<T>,
  ): Promise<T> {
    const { host, key, keys } = this.job;
    const tick = { job: key, at: new Date(at), catchUp, fencingToken: token };
    let outcome: 'done' | 'failed' = 'failed';
    try {
      const result = await runAsTick(tick, fn);
      outcome = 'done';
      return result;
    } finally {
      await host.ticks.settle(keys, at, outcome, pointer).catch((err: unknown) => {
        host.logger.warn(
          `Could not record that tick ${iso(at)} of "${key}" ended (${outcome}): ${message(err)}. ` +
            'The next run may take it for a run cut short.',
        );
      });
    }
  }
}
