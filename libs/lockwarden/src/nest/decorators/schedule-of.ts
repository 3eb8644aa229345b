import { LockConfigError } from '../../errors';
import { checkPeriod, describe, cronSchedule, everySchedule } from '../../core';
import type { CronSpec, TickSchedule } from '../../core';

/**
 * The schedule of a `@ScheduledLock` method that no `@Cron` or `@Interval` decorates (one
 * your own scheduler calls): a cron expression, one with its zone, or a fixed period.
 *
 * @example
 * ```ts
 * @ScheduledLock('reports', { schedule: '0 0 * * * *' })
 * @ScheduledLock('reports', { schedule: { cron: '0 0 9 * * 1-5', timeZone: 'Europe/Paris' } })
 * @ScheduledLock('sweep', { schedule: { everyMs: 30_000 } })
 * ```
 */
export type ScheduleSpec = string | { cron: string; timeZone?: string; utcOffset?: number } | { everyMs: number };

// The metadata keys @nestjs/schedule's @Cron and @Interval store; read by name, so that the
// package stays an optional peer.
const CRON_OPTIONS = 'SCHEDULE_CRON_OPTIONS';
const INTERVAL_OPTIONS = 'SCHEDULE_INTERVAL_OPTIONS';

/** A schedule given as an option. */
export function scheduleFromSpec(spec: unknown, where: string): TickSchedule {
  if (typeof spec === 'string') return cronSchedule({ cronTime: spec }, where);
  if (spec && typeof spec === 'object') {
    const s = spec as Record<string, unknown>;
    if (typeof s.cron === 'string') {
      return cronSchedule(
        { cronTime: s.cron, timeZone: s.timeZone as string, utcOffset: s.utcOffset as number },
        where,
      );
    }
    if (s.everyMs !== undefined) return everySchedule(checkPeriod(s.everyMs, where, 'schedule.everyMs'));
  }
  throw new LockConfigError(
    `${where}: schedule must be a cron expression, { cron, timeZone? } or { everyMs }, got ${describe(spec)}.`,
  );
}

/** The schedule `@Cron` or `@Interval` put on `method`, if either did. */
export function scheduleFromMetadata(method: object, where: string): TickSchedule | undefined {
  const cron = Reflect.getMetadata(CRON_OPTIONS, method) as CronSpec | undefined;
  if (cron) return cronSchedule(cron, where);
  const interval = Reflect.getMetadata(INTERVAL_OPTIONS, method) as { timeout?: unknown } | undefined;
  if (interval) return everySchedule(checkPeriod(interval.timeout, where, '@Interval'));
  return undefined;
}

/**
 * The tick a timer of `schedule` firing at `at` serves: the latest scheduled time at or
 * before it. The name `@ScheduledLock` gives a tick (`currentTick().at`), for code that
 * reports on ticks it does not run.
 *
 * @example
 * ```ts
 * tickOf('0 0 12 * * *', new Date('2026-11-22T12:00:03Z')); // 2026-11-22T12:00:00.000Z
 * tickOf({ everyMs: 60_000 });                               // the start of this minute
 * ```
 */
export function tickOf(schedule: ScheduleSpec, at: Date = new Date()): Date | undefined {
  const tick = scheduleFromSpec(schedule, 'tickOf').latest(at.getTime());
  return tick === undefined ? undefined : new Date(tick);
}
