import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The tick a `@ScheduledLock` run serves, as `LockService.currentTick()` returns it inside
 * the run.
 *
 * @example
 * ```ts
 * @Cron('0 0 12 * * *')
 * @ScheduledLock('lottery:daily-draw', { onMissed: 'run' })
 * async draw() {
 *   const tick = this.locks.currentTick()!;
 *   await this.draws.record(tick.at.toISOString().slice(0, 10), { fencingToken: tick.fencingToken });
 * }
 * ```
 */
export interface ScheduledTick {
  /** The job's name: its lock key. */
  readonly job: string;
  /** When the tick was scheduled: the same on every instance, whenever its timer fired. */
  readonly at: Date;
  /**
   * True when this run catches up a tick whose first run never finished (its instance
   * died or lost the lock mid-run), under `onMissed: 'run'`.
   */
  readonly catchUp: boolean;
  /** The fencing token of this run's hold on the job's lock. */
  readonly fencingToken: number;
}

const current = new AsyncLocalStorage<ScheduledTick>();

/** Runs `fn` as the run of `tick`. */
export function runAsTick<T>(tick: ScheduledTick, fn: () => T): T {
  return current.run(tick, fn);
}

/** The tick the calling async context runs, if any. */
export function currentTick(): ScheduledTick | undefined {
  return current.getStore();
}
