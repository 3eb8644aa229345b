import { LockAbortedError, LockTimeoutError } from '../../errors';
import type { LeaseHandle } from '../lease/lease';
import { askStore } from './job-host';
import type { JobHost, JobScope } from './job-host';
import type { CheckedScheduledOptions } from './scheduled-options';
import { TickHandOff } from './tick-hand-off';
import { TickNotices } from './tick-notices';
import { TickRunner } from './tick-runner';
import type { TickSchedule } from './tick-schedule';
import { tickKeys } from '../backend/tick-store';
import type { TickClaim } from '../backend/tick-store';

export type { JobHost } from './job-host';

// Deciding each tick lives here: whether this instance runs it, and taking the job's lock
// for it. The rest of a job is beside it, one part per file: the run under the lock
// (tick-runner.ts), ticks handed off at shutdown (tick-hand-off.ts), and what the job tells
// operators (tick-notices.ts).

const MINUTE = 60_000;

/**
 * One scheduled job: every tick of its schedule runs at most once across all instances,
 * and never two runs at once.
 *
 * A tick is named by its scheduled time, which every instance reads from the same schedule,
 * so a late timer (a busy event loop) or a lagging clock names it alike. Whoever fires it
 * first decides it, in one script: run it (the lock is free), skip it (the previous run is
 * still going: an overrun), or wait for that run (`onOverrun: 'wait'`). The decision is kept
 * in a record that expires after `keepTicksMs`; later firings of the tick find it and do
 * nothing. Time is the Redis server's: a tick never starts before the server's clock reaches
 * it, so an instance whose clock runs ahead waits rather than running early.
 *
 * A run names its tick in the job's run pointer while it goes. A run that never clears it
 * was cut short (its process died, or lost the lock); the next holder finds it and, under
 * `onMissed: 'run'`, runs that tick again first.
 */
export class ScheduledJob {
  private readonly job: JobScope;
  private readonly notices: TickNotices;
  private readonly handOffs: TickHandOff;
  private readonly runner: TickRunner;

  constructor(
    private readonly host: JobHost,
    readonly key: string,
    readonly schedule: TickSchedule,
    private readonly options: CheckedScheduledOptions,
  ) {
    this.job = { host, key, keys: tickKeys(host.keyPrefix, key), schedule, options };
    this.notices = new TickNotices(this.job);
    this.handOffs = new TickHandOff(this.job, this.notices);
    this.runner = new TickRunner(this.job, this.notices, this.handOffs);
  }

  /**
   * Runs `fn` for the tick that fired now, when this instance is the one to run it;
   * resolves `undefined` without running it otherwise.
   */
  async run<T>(fn: () => Promise<T>): Promise<T | undefined> {
    const at = this.due();
    return at === undefined ? undefined : this.runTick(at, fn);
  }

  /** The tick that fired now, or undefined (said at debug level) when there is none to run here. */
  due(): number | undefined {
    // A process that is shutting down claims nothing: the other instances, whose timers fire
    // for the same tick, run it instead.
    if (this.host.stopping.aborted) {
      this.host.logger.debug(`"${this.key}" did not run: the lock service is shutting down.`);
      return undefined;
    }
    const at = this.schedule.latest(Date.now());
    if (at === undefined) {
      this.host.logger.debug(`"${this.key}" did not run: ${this.schedule.description} has no tick yet.`);
    }
    return at;
  }

  /** Runs tick `at` (see run); shutdown waits for its handling to end (see JobHost.track). */
  runTick<T>(at: number, fn: () => Promise<T>): Promise<T | undefined> {
    return this.host.track(this.handleTick(at, fn));
  }

  private async handleTick<T>(at: number, fn: () => Promise<T>): Promise<T | undefined> {
    const keepMs = this.keepMs(at);
    const wait = this.options.onOverrun === 'wait';
    if (this.host.admit) await this.host.admit(this.key);
    const claimTick = (): Promise<TickClaim> => askStore(this.job, 'decide a tick of', this.claim(at, keepMs, wait));
    let claim = await claimTick();
    while (claim.state === 'early') {
      if (!(await this.waitForServer(at, claim.earlyMs, keepMs))) return undefined;
      claim = await claimTick();
    }
    switch (claim.state) {
      case 'taken':
        this.notices.taken(at, claim.record);
        return undefined;
      case 'busy':
        this.notices.busy(at, claim.holder);
        return undefined;
      case 'overrun':
        this.notices.overrun(at, claim.run);
        return undefined;
      default:
        break;
    }
    const handle = await this.take(at, claim.state === 'waiting', keepMs);
    if (!handle) return undefined;
    return this.host.runLocked(handle, () => this.runner.run(at, handle, keepMs, fn));
  }

  /**
   * The tick's claim, which fails while Redis is known to be unreachable (JobHost.reachable):
   * at once, or once the outage has lasted commandTimeoutMs. A claim that reached Redis after
   * that, and took the tick, hands it off, so that the job's next holder runs it.
   */
  private claim(at: number, keepMs: number, wait: boolean): Promise<TickClaim> {
    const send = (): Promise<TickClaim> => this.host.ticks.claim(this.job.keys, at, keepMs, wait);
    if (!this.host.reachable) return send();
    return this.host.reachable(this.key, 'decide a tick of', send, (late) => {
      if (late.state === 'claimed' || late.state === 'waiting') void this.handOffs.handOffLate(at);
    });
  }

  /** The job's lock for tick `at`, or null (the tick is then settled as an overrun). */
  private async take(at: number, wait: boolean, keepMs: number): Promise<LeaseHandle | null> {
    let handle: LeaseHandle | null;
    // The tick is recorded with the run's token: minted with the grant, in its one round trip.
    const acquire = { ...this.options.acquire, fenced: true };
    try {
      handle = wait
        ? await this.host.acquire(this.key, { ...acquire, waitMs: acquire.waitMs ?? keepMs })
        : await this.host.tryAcquire(this.key, acquire);
    } catch (err) {
      if (err instanceof LockAbortedError && this.host.stopping.aborted) {
        await this.handOffs.handOff(at, undefined);
        return null;
      }
      if (!(err instanceof LockTimeoutError)) throw err;
      handle = null;
    }
    if (!handle) {
      await askStore(this.job, 'record an overrun of', this.host.ticks.settle(this.job.keys, at, 'overrun'));
      this.notices.overrun(at, undefined);
    }
    return handle;
  }

  /** Waits until the server's clock reaches the tick; false when it should not run after all. */
  private async waitForServer(at: number, earlyMs: number, keepMs: number): Promise<boolean> {
    if (earlyMs > keepMs) {
      this.notices.farAhead(at, earlyMs);
      return false;
    }
    this.notices.ahead(earlyMs);
    return sleep(earlyMs, this.host.stopping);
  }

  private keepMs(at: number): number {
    if (this.options.keepTicksMs !== undefined) return this.options.keepTicksMs;
    const next = this.schedule.after(at);
    const period = next === undefined ? 24 * 60 * MINUTE : next - at;
    return Math.max(3 * period, MINUTE);
  }
}

/** Resolves true after `ms`, or false at once when `signal` aborts first. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (ran: boolean): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      resolve(ran);
    };
    const onAbort = (): void => done(false);
    const timer = setTimeout(() => done(true), Math.min(ms, 2 ** 31 - 1));
    signal.addEventListener('abort', onAbort);
  });
}
