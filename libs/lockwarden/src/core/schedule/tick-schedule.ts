/**
 * When a scheduled job's ticks fall. A tick is named by its scheduled time, read from the
 * schedule itself, so every instance names a tick alike however late its timer fires.
 */
export interface TickSchedule {
  /** How the schedule reads in messages: `cron "0 0 12 * * *"`, `every 1000 ms`. */
  readonly description: string;
  /** The latest tick at or before `nowMs` (ms since the epoch); undefined before the first. */
  latest(nowMs: number): number | undefined;
  /** The tick after `atMs`; undefined when there is none (a one-off date). */
  after(atMs: number): number | undefined;
}

/** Ticks every `everyMs`, in slots counted from the epoch: the same slots on every instance. */
export function everySchedule(everyMs: number): TickSchedule {
  return {
    description: `every ${everyMs} ms`,
    latest: (now) => Math.floor(now / everyMs) * everyMs,
    after: (at) => at + everyMs,
  };
}

/** One tick at a fixed time (a cron job given a date). */
export function onceSchedule(atMs: number): TickSchedule {
  return {
    description: `once at ${new Date(atMs).toISOString()}`,
    latest: (now) => (now >= atMs ? atMs : undefined),
    after: () => undefined,
  };
}

/**
 * Scans back from `now` in growing windows for the latest time `next` reaches at or
 * before it: `next(t)` is the first tick after `t`. Few steps for any schedule, since the
 * window that first holds a tick holds only a few.
 */
export function latestBefore(now: number, next: (t: number) => number | undefined): number | undefined {
  const DAY = 86_400_000;
  for (const window of [1_000, 60_000, 3_600_000, DAY, 32 * DAY, 367 * DAY, 4 * 367 * DAY]) {
    let at = next(now - window);
    if (at === undefined || at > now) continue;
    for (let n = next(at); n !== undefined && n <= now; n = next(at)) at = n;
    return at;
  }
  return undefined;
}
