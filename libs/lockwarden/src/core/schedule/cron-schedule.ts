import { createRequire } from 'node:module';
import { appRequire } from '../app-require';
import { LockConfigError } from '../../errors';
import { checkCronTime } from './scheduled-options';
import { latestBefore, onceSchedule } from './tick-schedule';
import type { TickSchedule } from './tick-schedule';

/** The part of the `cron` package's CronTime used here (the package @nestjs/schedule runs on). */
interface CronTimeLike {
  readonly timeZone?: string;
  readonly utcOffset?: number;
  getNextDateFrom(start: Date, timeZone?: string): { toMillis(): number };
}
type CronTimeClass = new (source: string, timeZone?: string | null, utcOffset?: number | null) => CronTimeLike;

/** What `@Cron` stores: its expression (or a date) and the zone it reads in. */
export interface CronSpec {
  readonly cronTime: string | Date | { toJSDate(): Date };
  readonly timeZone?: string;
  readonly utcOffset?: number | string;
}

let cronTimeClass: CronTimeClass | undefined;

/**
 * The `cron` package's CronTime, loaded from the application the first time a cron schedule
 * is read: the schedule is then computed by the very code that fires it, time zones and all.
 */
function loadCronTime(): CronTimeClass {
  if (cronTimeClass) return cronTimeClass;
  const local = appRequire();
  const attempts: (() => unknown)[] = [
    () => local('cron'),
    // Strict layouts (pnpm) let only @nestjs/schedule see its own dependency.
    () => createRequire(local.resolve('@nestjs/schedule'))('cron'),
  ];
  for (const attempt of attempts) {
    try {
      const found = (attempt() as { CronTime?: CronTimeClass }).CronTime;
      if (typeof found === 'function') return (cronTimeClass = found);
    } catch {
      // try the next place
    }
  }
  throw new LockConfigError(
    'A @ScheduledLock on a cron schedule needs the "cron" package (installed with @nestjs/schedule); it was not found.',
  );
}

/** A cron expression's ticks, as the `cron` package (which @nestjs/schedule runs) fires them. */
export function cronSchedule(spec: CronSpec, where: string): TickSchedule {
  const cronTime = checkCronTime(spec.cronTime, where);
  if (typeof cronTime !== 'string') return onceSchedule(cronTime.getTime());
  // The expression's syntax is the parser's to check: the `cron` package, loaded here.
  const CronTime = loadCronTime();
  const offset = spec.utcOffset === undefined ? undefined : Number(spec.utcOffset);
  let time: CronTimeLike;
  try {
    time = new CronTime(cronTime, spec.timeZone ?? null, offset ?? null);
  } catch (err) {
    throw new LockConfigError(`${where}: cron expression "${cronTime}" is not valid: ${(err as Error).message}`);
  }
  const zone = spec.timeZone ?? (offset === undefined ? time.timeZone : utcZone(offset));
  const next = (t: number): number | undefined => time.getNextDateFrom(new Date(t), zone).toMillis();
  return {
    description: `cron "${cronTime}"`,
    latest: (now) => latestBefore(now, next),
    after: next,
  };
}

/** A fixed offset in minutes as a zone name, as the cron package writes it. */
function utcZone(minutes: number): string {
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `UTC${sign}${pad(Math.trunc(abs / 60))}:${pad(abs % 60)}`;
}
