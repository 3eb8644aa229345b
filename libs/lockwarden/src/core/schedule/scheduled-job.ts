import { LockAbortedError, LockBackendError, LockError, LockTimeoutError } from '../../errors';
import type { AcquireOptions } from '../engine/options';
import type { LeaseHandle } from '../lease/lease';
import type { LockHandle } from '../lease/lock-handle';
import type { LockEvent } from '../observe/events';
import type { LockLogger } from '../observe/logger';
import type { CheckedScheduledOptions } from './scheduled-options';
import { runAsTick } from './tick-context';
import type { TickSchedule } from './tick-schedule';
import { tickKeys } from './tick-store';
import type { RunPointer, TickClaim, TickKeys, TickStore } from './tick-store';

/** What a scheduled job needs of the engine. */
export interface JobHost {
  readonly ticks: TickStore;
  readonly keyPrefix: string;
  readonly leaseMs: number;
  readonly logger: LockLogger;
  readonly emit: ((event: LockEvent) => void) | undefined;
  /** Aborts when the engine begins to shut down: no tick is claimed or started after it. */
  readonly stopping: AbortSignal;
  /** What was said once already, per job ("ahead:<key>", "overrun:<key>"), so a WARN is not repeated every tick. */
  readonly noticed: Set<string>;
  tryAcquire(key: string, options: AcquireOptions): Promise<LeaseHandle | null>;
  acquire(key: string, options: AcquireOptions): Promise<LeaseHandle>;
  /** Runs `fn` holding `handle`, then releases it (or keeps it to lockAtLeastMs). */
  hold<T>(handle: LeaseHandle, fn: () => Promise<T>): Promise<T>;
  /**
   * Work that shutdown waits for (within its grace) before it closes Redis: a tick's whole
   * handling, so that a tick given back while shutting down reaches Redis.
   */
  track<T>(work: Promise<T>): Promise<T>;
}

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
  private readonly keys: TickKeys;

  constructor(
    private readonly host: JobHost,
    readonly key: string,
    readonly schedule: TickSchedule,
    private readonly options: CheckedScheduledOptions,
  ) {
    this.keys = tickKeys(host.keyPrefix, key);
  }

  private get name(): string {
    return this.options.acquire.name ?? this.key;
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
    const claimTick = (): Promise<TickClaim> =>
      this.redis('decide a tick of', this.host.ticks.claim(this.keys, at, keepMs, wait));
    let claim = await claimTick();
    while (claim.state === 'early') {
      if (!(await this.waitForServer(at, claim.earlyMs, keepMs))) return undefined;
      claim = await claimTick();
    }
    switch (claim.state) {
      case 'taken':
        this.skipped(at, `already ${describeRecord(claim.record)}`);
        return undefined;
      case 'busy':
        this.skipped(
          at,
          `"${this.key}" is held by ${claim.holder || 'another instance'}, but by no run of the job ` +
            '(lockAtLeastMs keeps it, or a caller outside the schedule holds it)',
        );
        return undefined;
      case 'overrun':
        this.overrun(at, claim.run);
        return undefined;
      default:
        break;
    }
    const handle = await this.take(at, claim.state === 'waiting', keepMs);
    if (!handle) return undefined;
    return this.host.hold(handle, () => this.start(at, handle, keepMs, fn));
  }

  /** The job's lock for tick `at`, or null (the tick is then settled as an overrun). */
  private async take(at: number, wait: boolean, keepMs: number): Promise<LeaseHandle | null> {
    let handle: LeaseHandle | null;
    try {
      handle = wait
        ? await this.host.acquire(this.key, { ...this.options.acquire, waitMs: this.options.acquire.waitMs ?? keepMs })
        : await this.host.tryAcquire(this.key, this.options.acquire);
    } catch (err) {
      if (err instanceof LockAbortedError && this.host.stopping.aborted) {
        await this.giveBack(at, undefined);
        return null;
      }
      if (!(err instanceof LockTimeoutError)) throw err;
      handle = null;
    }
    if (!handle) {
      await this.redis('record an overrun of', this.host.ticks.settle(this.keys, at, 'overrun'));
      this.overrun(at, undefined);
    }
    return handle;
  }

  /**
   * Gives back a tick this instance claimed but will not run, because it began to shut down.
   * Its record goes, so an instance that fires the tick after this runs it; and the job's next
   * holder runs it (runGiven), since the instances whose timers fired before found it taken.
   */
  private async giveBack(at: number, pointer: string | undefined): Promise<void> {
    try {
      await this.host.ticks.settle(this.keys, at, 'released', pointer);
      this.host.logger.warn(
        `Tick ${iso(at)} of "${this.key}" did not run here: this instance began to shut down after it had taken ` +
          'the tick, and handed it on. The next instance to hold the job runs it (right after a run in progress, ' +
          'or before its own next tick).',
      );
    } catch (err) {
      this.host.emit?.({ type: 'missed', key: this.key, name: this.name, tick: new Date(at), reason: 'shutting down' });
      this.host.logger.warn(
        `Tick ${iso(at)} of "${this.key}" did not run: this instance began to shut down after it had taken the tick, ` +
          `and could not hand it on (${message(err)}). It is probably lost.`,
      );
    }
  }

  /**
   * Runs a tick another instance gave back while shutting down, this instance holding the
   * job's lock: `older` ones before this instance's own tick, newer ones after it. A tick an
   * instance claimed since (its timer fired late) is left to it. Never throws: the tick's own
   * outcome is recorded and logged by its run.
   */
  private async runGiven<T>(at: number, handle: LockHandle, keepMs: number, fn: () => Promise<T>, older: boolean) {
    if (this.host.stopping.aborted) return; // left for the next holder
    try {
      const given = await this.host.ticks.given(this.keys);
      if (given === undefined || given === at || given < at !== older) return;
      if (!(await this.host.ticks.adopt(this.keys, given))) return;
      if (older && this.options.onOverrun === 'wait') {
        // Only the newest waiting tick runs: this instance's own tick is newer.
        await this.host.ticks.settle(this.keys, given, 'overrun');
        this.overrun(given, undefined, 'a later tick came while it waited, and runs instead');
        return;
      }
      this.host.logger.debug(`"${this.key}" runs tick ${iso(given)}, which an instance gave back while shutting down.`);
      await this.start(given, handle, keepMs, fn);
    } catch (err) {
      this.host.logger.warn(`Running a tick of "${this.key}" that another instance handed on failed: ${message(err)}`);
    }
  }

  private async start<T>(at: number, handle: LockHandle, keepMs: number, fn: () => Promise<T>): Promise<T | undefined> {
    await this.runGiven(at, handle, keepMs, fn, true);
    const token = handle.fencingToken;
    const runKeepMs = keepMs + (this.options.acquire.ttlMs ?? this.host.leaseMs);
    const next = this.options.onOverrun === 'wait' ? this.schedule.after(at) : undefined;
    const started = await this.redis('start a tick of', this.host.ticks.start(this.keys, at, token, runKeepMs, next));
    if (started.superseded) {
      this.overrun(at, undefined, 'a later tick came while it waited, and runs instead');
      return undefined;
    }
    let pointer = started.pointer;
    if (started.found && started.found.at !== at) {
      const missed = started.found;
      const again = this.options.onMissed === 'run';
      this.missed(at, missed, again);
      if (again) {
        const rerun = await this.redis(
          'start a tick of',
          this.host.ticks.start(this.keys, missed.at, token, runKeepMs),
        );
        await this.execute(missed.at, rerun.pointer, token, true, fn).catch((err: unknown) => {
          this.host.logger.warn(`Catching up tick ${iso(missed.at)} of "${this.key}" failed: ${message(err)}`);
        });
        const resumed = this.host.ticks.start(this.keys, at, token, runKeepMs);
        pointer = (await this.redis('start a tick of', resumed)).pointer;
      }
    }
    if (this.host.stopping.aborted) {
      // Shutdown began while this run was getting ready (or catching up): nothing new starts.
      await this.giveBack(at, pointer);
      return undefined;
    }
    try {
      return await this.execute(at, pointer, token, false, fn);
    } finally {
      await this.runGiven(at, handle, keepMs, fn, false);
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
    const tick = { job: this.key, at: new Date(at), catchUp, fencingToken: token };
    let outcome: 'done' | 'failed' = 'failed';
    try {
      const result = await runAsTick(tick, fn);
      outcome = 'done';
      return result;
    } finally {
      await this.host.ticks.settle(this.keys, at, outcome, pointer).catch((err: unknown) => {
        this.host.logger.warn(
          `Could not record that tick ${iso(at)} of "${this.key}" ended (${outcome}): ${message(err)}. ` +
            'The next run may take it for a run cut short.',
        );
      });
    }
  }

  /** Waits until the server's clock reaches the tick; false when it should not run after all. */
  private async waitForServer(at: number, earlyMs: number, keepMs: number): Promise<boolean> {
    if (earlyMs > keepMs) {
      this.host.logger.warn(
        `Tick ${iso(at)} of "${this.key}" did not run: this instance's clock is ${earlyMs} ms ahead of Redis, ` +
          'more than the ticks are kept. Fix the clock (NTP).',
      );
      return false;
    }
    if (this.once('ahead')) {
      this.host.logger.warn(
        `This instance's clock runs about ${earlyMs} ms ahead of Redis: its ticks of "${this.key}" wait for the server's time.`,
      );
    }
    return sleep(earlyMs, this.host.stopping);
  }

  /** True the first time `what` is asked for this job in this process. */
  private once(what: string): boolean {
    const id = `${what}:${this.key}`;
    if (this.host.noticed.has(id)) return false;
    this.host.noticed.add(id);
    return true;
  }

  /** A tick store call, whose failure is a LockBackendError in the library's words. */
  private async redis<T>(action: string, call: Promise<T>): Promise<T> {
    try {
      return await call;
    } catch (err) {
      throw err instanceof LockError ? err : new LockBackendError(this.key, action, err);
    }
  }

  private keepMs(at: number): number {
    if (this.options.keepTicksMs !== undefined) return this.options.keepTicksMs;
    const next = this.schedule.after(at);
    const period = next === undefined ? 24 * 60 * MINUTE : next - at;
    return Math.max(3 * period, MINUTE);
  }

  private skipped(at: number, why: string): void {
    this.host.emit?.({ type: 'skipped', key: this.key, name: this.name, tick: new Date(at) });
    this.host.logger.debug(`Tick ${iso(at)} of "${this.key}" skipped: ${why}.`);
  }

  private overrun(at: number, run: RunPointer | undefined, why?: string): void {
    this.host.emit?.({ type: 'overrun', key: this.key, name: this.name, tick: new Date(at) });
    const reason =
      why ??
      (run
        ? `the run of tick ${iso(run.at)} on ${run.instanceId} still holds the job (until it ends, or its lease does)`
        : 'the previous run was still going when it came');
    this.host.logger.debug(`Tick ${iso(at)} of "${this.key}" skipped as an overrun: ${reason}.`);
    if (this.once('overrun')) {
      const choice =
        this.options.onOverrun === 'wait'
          ? "with onOverrun: 'wait' only the newest waiting tick runs"
          : "onOverrun: 'wait' runs the newest skipped tick once the run before it ends";
      this.host.logger.warn(
        `Ticks of "${this.key}" are being skipped: its runs outlast its ${this.schedule.description} schedule. ` +
          `Each overrun is counted (lockwarden.tick.overruns) and logged at debug level; ${choice}.`,
      );
    }
  }

  private missed(at: number, run: RunPointer, again: boolean): void {
    const reason = again ? "running it again now (onMissed: 'run')" : "not running it again (onMissed: 'skip')";
    this.host.emit?.({ type: 'missed', key: this.key, name: this.name, tick: new Date(run.at), reason });
    this.host.logger.warn(
      `Tick ${iso(run.at)} of "${this.key}" never finished: its run on ${run.instanceId} (fencing token ` +
        `${run.fencingToken}) stopped mid-run, as a process that died or lost the lock does; ${reason}. ` +
        `Found by the run of tick ${iso(at)}.`,
    );
  }
}

/** "done by host-a:12" from a record "done|host-a:12". */
function describeRecord(record: string): string {
  const [state, instance] = record.split('|');
  const said: Record<string, string> = {
    claimed: 'taken',
    waiting: 'taken, waiting for the run before it,',
    running: 'being run',
    done: 'run',
    failed: 'run (it failed)',
    overrun: 'skipped as an overrun',
    busy: 'skipped',
    superseded: 'superseded',
  };
  return `${said[state] ?? state} by ${instance ?? 'another instance'}`;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
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
