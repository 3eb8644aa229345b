import { Injectable } from '@nestjs/common';
import type { OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { LockConfigError } from '../errors';
import { SCHEDULED_LOCK_METADATA } from './decorators/locked.constants';
import { scheduleFromMetadata } from './decorators/schedule-of';
import { noScheduleError } from './decorators/scheduled-lock.decorator';
import { providerMethods } from './provider-methods';
import type { ScheduledLockMetadata } from './decorators/scheduled-lock.decorator';

/**
 * Checks every `@ScheduledLock` method of the application's providers at bootstrap, so that
 * a job whose ticks cannot be told apart fails the start, not its first tick: its schedule
 * must be readable (`@Cron`, `@Interval` or the `schedule` option, not two of them), and two
 * methods may not share one job name (they would share its tick records).
 */
@Injectable()
export class ScheduledLockExplorer implements OnApplicationBootstrap {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  onApplicationBootstrap(): void {
    const jobs = new Map<string, object>();
    for (const { fn } of providerMethods(this.discovery, this.scanner)) {
      if (typeof fn !== 'function') continue;
      const meta = Reflect.getMetadata(SCHEDULED_LOCK_METADATA, fn) as ScheduledLockMetadata | undefined;
      if (!meta) continue;
      if (!meta.schedule(fn) && !meta.lockOnly) throw noScheduleError(meta.where);
      if (meta.scheduleOption && scheduleFromMetadata(fn, meta.where)) {
        throw new LockConfigError(
          `@ScheduledLock on ${meta.where}: the method has @Cron or @Interval and a schedule option; give its schedule once.`,
        );
      }
      const other = jobs.get(meta.name);
      if (!meta.name.includes('{') && other && other !== fn) {
        const first = (Reflect.getMetadata(SCHEDULED_LOCK_METADATA, other) as ScheduledLockMetadata).where;
        throw new LockConfigError(
          `@ScheduledLock on ${meta.where} and on ${first} share the job name "${meta.name}": they would share its ` +
            'tick records, and each would skip the ticks the other ran. Give each job its own name.',
        );
      }
      jobs.set(meta.name, fn);
    }
  }
}
