import { LockAbortedError, LockBackendError, LockConfigError, LockLostError } from '../../errors';
import { redisReason } from '../../errors/redis-reason';
import { tellRefusal } from '../../errors/refusal-notice';
import { checkScheduledOptions } from '../../core';
import type { CheckedScheduledOptions, ScheduledJobOptions, TickSchedule } from '../../core';
import { compileKeySpec } from './key-template';
import type { KeyResolver } from './key-template';
import { callMethod, checkLockable, className, engineOf, lockAndRun, toMetadata, wrapMethod } from './lock-method';
import type { LockableMethod, LockMethodDecorator } from './lock-method';
import type { LockedMetadata } from '../locked-metadata.accessor';
import { SCHEDULED_LOCK_METADATA } from './locked.constants';
import { lockSignalParameter } from './lock-signal.decorator';
import { scheduleFromMetadata, scheduleFromSpec } from './schedule-of';
import type { ScheduleSpec } from './schedule-of';

/**
 * Options of `@ScheduledLock`: the job's (`onOverrun`, `onMissed`, `keepTicksMs`), the
 * lock's (`maxHoldMs`, `leaseMs`, `renew`, `lockAtLeastMs`, `name`), and `schedule` for a method that
 * no `@Cron` or `@Interval` decorates.
 */
export interface ScheduledLockOptions extends ScheduledJobOptions {
  /** The method's schedule when no `@Cron` or `@Interval` is on it (your own scheduler calls it). */
  schedule?: ScheduleSpec;
}

/** What `@ScheduledLock` recorded about one method. */
export interface ScheduledLockMetadata {
  readonly where: string;
  /** The job's name as written (a key template when it has `{…}`). */
  readonly name: string;
  /** Whether the `schedule` option named the schedule (then no `@Cron` or `@Interval` may). */
  readonly scheduleOption: boolean;
  readonly keys: KeyResolver;
  readonly job: CheckedScheduledOptions;
  /** The method's schedule: from `schedule`, or read once from `@Cron` / `@Interval`. */
  schedule(method: object): TickSchedule | undefined;
  /** Without any schedule but with `lockAtLeastMs`: the lock-only behaviour of earlier versions. */
  readonly lockOnly: LockedMetadata | undefined;
  /** The index of the method's `@LockSignal()` parameter, if it has one. */
  readonly signalArg: number | undefined;
}

/**
 * Deduplicates a scheduled job across instances by tick: each tick of its `@Cron` or
 * `@Interval` runs once across all instances however late each instance's timer fires, no
 * later tick is skipped because an earlier run is over, and two runs never overlap.
 *
 * - A tick is named by its scheduled time, read from the schedule itself, and decided in
 *   Redis by whichever instance fires it first; the decision is kept (one small key per
 *   tick, expiring after `keepTicksMs`: three periods, at least a minute).
 * - A tick that comes while the previous run still goes is skipped and reported as an
 *   overrun (`onOverrun: 'wait'` runs it when that run ends).
 * - A tick whose instance died mid-run is not run again unless `onMissed: 'run'`.
 * - Time is the Redis server's: no tick starts before the server's clock reaches it.
 *
 * Nothing needs tuning; `lockAtLeastMs` is still honoured but not needed. Inside the run,
 * `LockService.currentTick()` says which tick it is. A method called by your own scheduler
 * names its schedule with `schedule`.
 *
 * A tick that Redis fails to decide (it is down) does not run here: one warning line names the
 * tick and the reason, and the call resolves `undefined`. The method's own errors reach its
 * scheduler as they would without the decorator.
 *
 * @example
 * ```ts
 * @Cron('0 0 12 * * *')
 * @ScheduledLock('lottery:daily-draw', { onMissed: 'run' })
 * async draw() { ... }
 *
 * @Interval(30_000)
 * @ScheduledLock('sweep')
 * async sweep() { ... }
 * ```
 */
export function ScheduledLock(name: string, options: ScheduledLockOptions = {}): LockMethodDecorator {
  return ((target: object, propertyKey: string | symbol, descriptor: TypedPropertyDescriptor<LockableMethod>) => {
    const where = `${className(target)}.${String(propertyKey)}()`;
    const original = checkLockable('ScheduledLock', where, descriptor);
    const checked = checkScheduledOptions(options, where, new Set(['schedule']));
    // Metrics label a job by its name as written, never by the keys a template expands to.
    const job = { ...checked, acquire: { ...checked.acquire, name: checked.acquire.name ?? name } };
    const given = options?.schedule === undefined ? undefined : scheduleFromSpec(options.schedule, where);
    const paramTypes = Reflect.getMetadata('design:paramtypes', target, propertyKey) as unknown[] | undefined;
    const keys = compileKeySpec(name, where, paramTypes?.length ?? Infinity);
    let read: { schedule: TickSchedule | undefined } | undefined;
    const signalArg = lockSignalParameter(target, propertyKey);
    const metadata: ScheduledLockMetadata = {
      where,
      name,
      scheduleOption: given !== undefined,
      keys,
      job,
      schedule: (method) => given ?? (read ??= { schedule: scheduleFromMetadata(method, where) }).schedule,
      lockOnly:
        job.acquire.lockAtLeastMs === undefined
          ? undefined
          : toMetadata(
              { lockSpec: { kind: 'mutex', options: job.acquire }, onBusy: 'skip', retryAfterMs: undefined },
              name,
              keys,
              where,
              signalArg,
            ),
      signalArg,
    };
    return wrapMethod(target, propertyKey, descriptor, [SCHEDULED_LOCK_METADATA, metadata], (self, args, wrapper) =>
      runScheduled(self, args, metadata, original, wrapper),
    );
  }) as LockMethodDecorator;
}

/** The error for a `@ScheduledLock` method whose ticks cannot be told apart. */
export function noScheduleError(where: string): LockConfigError {
  return new LockConfigError(
    `@ScheduledLock on ${where}: cannot tell which tick a call serves. Put @Cron or @Interval on the method, ` +
      "or name its schedule: { schedule: '0 * * * * *' } or { schedule: { everyMs: 60_000 } }.",
  );
}

async function runScheduled(
  self: unknown,
  args: unknown[],
  meta: ScheduledLockMetadata,
  original: LockableMethod,
  wrapper: object,
): Promise<unknown> {
  const engine = engineOf(self, meta.where);
  const schedule = meta.schedule(wrapper);
  if (!schedule) {
    if (meta.lockOnly) return lockAndRun(self, args, meta.lockOnly, original, wrapper);
    throw noScheduleError(meta.where);
  }
  const keys = meta.keys(self, args);
  if (keys.length !== 1) {
    throw new LockConfigError(
      `@ScheduledLock on ${meta.where}: a scheduled job has one name, got ${keys.length} keys.`,
    );
  }
  const job = engine.scheduledJob(keys[0], schedule, meta.job);
  const at = job.due();
  if (at === undefined) return undefined;
  let own: { error: unknown } | undefined;
  const run = async (): Promise<unknown> => {
    try {
      // The tick runs holding the job's lock, in its frame: its signal is the current lock's.
      const signalArg = meta.signalArg;
      const given = signalArg === undefined ? args : withSignal(args, signalArg, engine.current(job.key)?.signal);
      return await callMethod(original, self, given);
    } catch (error) {
      own = { error };
      throw error;
    }
  };
  const logger = engine.options.logger;
  try {
    return await job.runTick(at, run);
  } catch (err) {
    // A tick that cannot run because the app is stopping did not run, as a skip.
    if (err instanceof LockAbortedError && engine.shuttingDown) {
      logger.debug(`${meta.where} did not run: the application is shutting down.`);
      return undefined;
    }
    // The method's own failure is the scheduler's to report, as without the decorator.
    if (own?.error === err) throw err;
    // The tick ran to its end, but its lock was lost meanwhile: the engine said so at ERROR, with
    // the key; the scheduler's stack trace would only say it again.
    if (err instanceof LockLostError && err.workCompleted) return undefined;
    if (!(err instanceof LockBackendError)) throw err;
    // Redis failed, not the method: one line per tick, not a stack trace per tick of an outage. A
    // refusal (an ACL, say) stops every tick alike: said once, with its fix, and each tick at debug.
    const notRun = `Tick ${new Date(at).toISOString()} of "${job.key}" did not run: ${redisReason(err.cause)}.`;
    if (tellRefusal(logger, err)) logger.debug(notRun);
    else logger.warn(notRun);
    logger.debug(`${meta.where}: ${err.stack ?? err.message}`);
    return undefined;
  }
}

/** `args` with the lock's signal at `index`. */
function withSignal(args: unknown[], index: number, signal: AbortSignal | undefined): unknown[] {
  const out = [...args];
  out[index] = signal;
  return out;
}
