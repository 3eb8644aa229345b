import { Locked } from './locked.decorator';
import type { LockMethodDecorator } from './lock-method';
import type { LockedOptions } from './locked-options';

/**
 * `@Locked` for scheduled jobs: skips the run when another instance holds the
 * job, and by default keeps the lock `lockAtLeastMs` (60 s) after the job
 * started, so instances whose clocks are a little behind skip the same tick
 * instead of running it again. Put it next to `@Cron` or `@Interval`.
 *
 * @example
 * ```ts
 * @Cron('0 0 12 * * *')
 * @ScheduledLock('lottery:daily-draw', { lockAtLeastMs: 60_000, maxHoldMs: 10 * 60_000 })
 * async draw() { ... }
 * ```
 */
export function ScheduledLock(name: string, options: Omit<LockedOptions, 'onBusy'> = {}): LockMethodDecorator {
  return Locked(name, { onBusy: 'skip', lockAtLeastMs: 60_000, ...options });
}
