import { LockConfigError } from '../../errors';
import { checkAcquireOptions, checkKnownNames, describe, MAX_MS } from '../options/options';
import type { AcquireOptions } from '../options/options';

/** What happens to a tick that comes while the job's previous run is still going. */
export type OnOverrun = 'skip' | 'wait';
/** What happens to a tick whose run never finished (its instance died or lost the lock mid-run). */
export type OnMissed = 'skip' | 'run';

/**
 * Options of a scheduled job (`@ScheduledLock`), beside the lock's own.
 *
 * @example
 * ```ts
 * @Cron('0 * * * * *')
 * @ScheduledLock('sync-rates', { onOverrun: 'wait', onMissed: 'run' })
 * async sync() { ... }
 * ```
 */
export interface ScheduledJobOptions extends Omit<AcquireOptions, 'signal' | 'fair' | 'fenced'> {
  /**
   * A tick that comes while the previous run is still going: `'skip'` (default) skips it,
   * counted and reported as an overrun; `'wait'` runs it once the previous run ends. Ticks
   * never pile up: of several waiting ticks only the newest runs, the others count as overruns.
   */
  onOverrun?: OnOverrun;
  /**
   * A tick whose run never finished because its instance died (or lost the lock) mid-run:
   * `'skip'` (default) reports it and does not run it again, since a job may not be
   * idempotent; `'run'` has the next instance to take the job run it again first, with
   * `currentTick().catchUp` set. Give such a job a fencing check or an idempotent write.
   */
  onMissed?: OnMissed;
  /**
   * How long each tick's record stays in Redis, in ms: a timer of that tick firing later
   * than this (a clock that lags by more) would run it again. Default: three periods of the
   * schedule, and at least one minute.
   */
  keepTicksMs?: number;
}

const NAMES: ReadonlySet<string> = new Set(['onOverrun', 'onMissed', 'keepTicksMs']);
const LOCK_NAMES = ['leaseMs', 'renew', 'waitMs', 'maxHoldMs', 'lockAtLeastMs', 'name'];
const CHECK_DEFAULTS = { keyPrefix: '', leaseMs: 30_000, waitMs: 0, safetyMarginMs: undefined };

export interface CheckedScheduledOptions {
  readonly acquire: AcquireOptions;
  readonly onOverrun: OnOverrun;
  readonly onMissed: OnMissed;
  readonly keepTicksMs: number | undefined;
}

/** Validates a scheduled job's options; `extra` names options the caller accepts beside them. */
export function checkScheduledOptions(
  options: unknown,
  where: string,
  extra: ReadonlySet<string> = new Set(),
): CheckedScheduledOptions {
  const fail = (message: string): never => {
    throw new LockConfigError(`${where}: ${message}`);
  };
  try {
    if (options && typeof options === 'object') {
      checkKnownNames('scheduled job', options, new Set([...LOCK_NAMES, ...NAMES, ...extra]));
    }
    checkAcquireOptions(options, CHECK_DEFAULTS, new Set([...NAMES, ...extra]));
  } catch (err) {
    fail((err as Error).message);
  }
  const {
    onOverrun = 'skip',
    onMissed = 'skip',
    keepTicksMs,
    ...rest
  } = (options ?? {}) as ScheduledJobOptions & Record<string, unknown>;
  for (const name of extra) delete rest[name];
  if (onOverrun !== 'skip' && onOverrun !== 'wait')
    fail(`onOverrun must be 'skip' or 'wait', got ${describe(onOverrun)}.`);
  if (onMissed !== 'skip' && onMissed !== 'run') fail(`onMissed must be 'skip' or 'run', got ${describe(onMissed)}.`);
  if (
    keepTicksMs !== undefined &&
    (typeof keepTicksMs !== 'number' || !Number.isInteger(keepTicksMs) || keepTicksMs < 1_000 || keepTicksMs > MAX_MS)
  ) {
    fail(`keepTicksMs must be an integer from 1000 to ${MAX_MS}, got ${describe(keepTicksMs)}.`);
  }
  return { acquire: rest as AcquireOptions, onOverrun, onMissed, keepTicksMs };
}

/** A fixed schedule's period (`schedule.everyMs`, `@Interval`): a whole number of ms a timer can wait. */
export function checkPeriod(value: unknown, where: string, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_MS) {
    throw new LockConfigError(`${where}: ${what} must be a whole number of ms, got ${describe(value)}.`);
  }
  return value;
}

/**
 * A cron schedule's time: an expression (returned as it is, for the `cron` package to parse
 * where the schedule is built), or a date (a `Date`, or a Luxon `DateTime` as `@Cron` allows).
 */
export function checkCronTime(value: unknown, where: string): string | Date {
  if (typeof value === 'string' || value instanceof Date) return value;
  const luxon = value as { toJSDate?: unknown } | null;
  if (typeof luxon === 'object' && luxon !== null && typeof luxon.toJSDate === 'function') {
    return (luxon as { toJSDate(): Date }).toJSDate();
  }
  throw new LockConfigError(`${where}: the cron schedule must be an expression or a date, got ${describe(value)}.`);
}
