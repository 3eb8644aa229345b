import type { JobScope } from './job-host';
import type { RunPointer } from '../backend/tick-store';

/**
 * What a scheduled job tells operators about the ticks it does not run here (skipped,
 * overrun, missed, handed off, lost) and about a clock that runs ahead of Redis: each as an
 * event and a log line. Kept apart from deciding and running ticks so that the wording,
 * the event each outcome counts as, and which warning is said only once per job and
 * process, are found in one place.
 */
export class TickNotices {
  constructor(private readonly job: JobScope) {}

  private get name(): string {
    return this.job.options.acquire.name ?? this.job.key;
  }

  /** Another firing of tick `at` decided it already: its record says how. */
  taken(at: number, record: string): void {
    this.skipped(at, `already ${describeRecord(record)}`);
  }

  /** The job's lock is held, but by no run of the job. */
  busy(at: number, holder: string): void {
    this.skipped(
      at,
      `"${this.job.key}" is held by ${holder || 'another instance'}, but by no run of the job ` +
        '(lockAtLeastMs keeps it, or a caller outside the schedule holds it)',
    );
  }

  overrun(at: number, run: RunPointer | undefined, why?: string): void {
    const { host, key, schedule, options } = this.job;
    host.emit?.({ type: 'overrun', key, name: this.name, tick: new Date(at) });
    const reason =
      why ??
      (run
        ? `the run of tick ${iso(run.at)} on ${run.instanceId} still holds the job (until it ends, or its lease does)`
        : 'the previous run was still going when it came');
    host.logger.debug(`Tick ${iso(at)} of "${key}" skipped as an overrun: ${reason}.`);
    if (this.once('overrun')) {
      const choice =
        options.onOverrun === 'wait'
          ? "with onOverrun: 'wait' only the newest waiting tick runs"
          : "onOverrun: 'wait' runs the newest skipped tick once the run before it ends";
      host.logger.warn(
        `Ticks of "${key}" are being skipped: its runs outlast its ${schedule.description} schedule. ` +
          `Each overrun is counted (lockwarden.tick.overruns) and logged at debug level; ${choice}.`,
      );
    }
  }

  /** The run of tick `at` found `run`, which never finished; `again` under onMissed: 'run'. */
  missed(at: number, run: RunPointer, again: boolean): void {
    const { host, key } = this.job;
    const reason = again ? "running it again now (onMissed: 'run')" : "not running it again (onMissed: 'skip')";
    host.emit?.({ type: 'missed', key, name: this.name, tick: new Date(run.at), reason });
    host.logger.warn(
      `Tick ${iso(run.at)} of "${key}" never finished: its run on ${run.instanceId} (fencing token ` +
        `${run.fencingToken}) stopped mid-run, as a process that died or lost the lock does; ${reason}. ` +
        `Found by the run of tick ${iso(at)}.`,
    );
  }

  /** Tick `at` was handed off at shutdown, for the job's next holder. */
  handedOff(at: number): void {
    this.job.host.logger.warn(
      `Tick ${iso(at)} of "${this.job.key}" did not run here: this instance began to shut down after it had taken ` +
        'the tick, and handed it off. The next instance to hold the job runs it (right after a run in progress, ' +
        'or before its own next tick).',
    );
  }

  /** Tick `at` was to be handed off at shutdown, but that failed: no one runs it. */
  lost(at: number, err: unknown): void {
    const { host, key } = this.job;
    host.emit?.({ type: 'missed', key, name: this.name, tick: new Date(at), reason: 'shutting down' });
    host.logger.warn(
      `Tick ${iso(at)} of "${key}" did not run: this instance began to shut down after it had taken the tick, ` +
        `and could not hand it off (${message(err)}). It is probably lost.`,
    );
  }

  /** This instance's clock is further ahead of Redis than ticks are kept: tick `at` does not run. */
  farAhead(at: number, earlyMs: number): void {
    this.job.host.logger.warn(
      `Tick ${iso(at)} of "${this.job.key}" did not run: this instance's clock is ${earlyMs} ms ahead of Redis, ` +
        'more than the ticks are kept. Fix the clock (NTP).',
    );
  }

  /** This instance's clock is ahead of Redis: its ticks wait for the server's time. Said once. */
  ahead(earlyMs: number): void {
    if (!this.once('ahead')) return;
    this.job.host.logger.warn(
      `This instance's clock runs about ${earlyMs} ms ahead of Redis: its ticks of "${this.job.key}" wait for the server's time.`,
    );
  }

  private skipped(at: number, why: string): void {
    const { host, key } = this.job;
    host.emit?.({ type: 'skipped', key, name: this.name, tick: new Date(at) });
    host.logger.debug(`Tick ${iso(at)} of "${key}" skipped: ${why}.`);
  }

  /** True the first time `what` is asked for this job in this process. */
  private once(what: string): boolean {
    const id = `${what}:${this.job.key}`;
    if (this.job.host.noticed.has(id)) return false;
    this.job.host.noticed.add(id);
    return true;
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

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
