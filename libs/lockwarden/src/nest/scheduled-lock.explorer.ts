import { Injectable } from '@nestjs/common';
import type { OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { SCHEDULED_LOCK_METADATA } from './decorators/locked.constants';
import { noScheduleError } from './decorators/scheduled-lock.decorator';
import type { ScheduledLockMetadata } from './decorators/scheduled-lock.decorator';

/**
 * Checks every `@ScheduledLock` method of the application's providers at bootstrap: its
 * schedule must be readable (`@Cron`, `@Interval` or the `schedule` option), so a job whose
 * ticks cannot be told apart fails the start, not its first tick.
 */
@Injectable()
export class ScheduledLockExplorer implements OnApplicationBootstrap {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  onApplicationBootstrap(): void {
    for (const wrapper of [...this.discovery.getControllers(), ...this.discovery.getProviders()]) {
      const instance: unknown = wrapper.instance;
      if (!instance || typeof instance !== 'object' || !Object.getPrototypeOf(instance)) continue;
      for (const method of this.scanner.getAllMethodNames(Object.getPrototypeOf(instance) as object)) {
        const fn = (instance as Record<string, unknown>)[method];
        if (typeof fn !== 'function') continue;
        const meta = Reflect.getMetadata(SCHEDULED_LOCK_METADATA, fn) as ScheduledLockMetadata | undefined;
        if (meta && !meta.schedule(fn) && !meta.lockOnly) throw noScheduleError(meta.where);
      }
    }
  }
}
