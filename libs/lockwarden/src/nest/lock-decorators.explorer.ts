import { Injectable } from '@nestjs/common';
import type { OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { LockConfigError } from '../errors';
import { SCHEDULED_LOCK_METADATA } from './decorators/locked.constants';
import { scheduleFromMetadata } from './decorators/schedule-of';
import { noScheduleError } from './decorators/scheduled-lock.decorator';
import { providerMethods } from './provider-methods';
import { lockSignalParameter } from './decorators/lock-signal.decorator';
import { getLockedMetadata } from './locked-metadata.accessor';
import { className } from './decorators/lock-method';
import type { ScheduledLockMetadata } from './decorators/scheduled-lock.decorator';

/**
 * Checks the lock decorators on the application's providers and controllers at bootstrap, so
 * that a mistake fails the start, not a call:
 * - every `@ScheduledLock` job's ticks can be told apart: its schedule is readable (`@Cron`,
 *   `@Interval` or the `schedule` option, not two of them), and no two methods share one job
 *   name (they would share its tick records);
 * - a `@LockSignal()` parameter sits on a lock-decorated method (elsewhere nothing would fill it).
 */
@Injectable()
export class LockDecoratorsExplorer implements OnApplicationBootstrap {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  onApplicationBootstrap(): void {
    const jobs = new Map<string, object>();
    for (const { fn, instance, name } of providerMethods(this.discovery, this.scanner)) {
      if (typeof fn !== 'function') continue;
      const meta = Reflect.getMetadata(SCHEDULED_LOCK_METADATA, fn) as ScheduledLockMetadata | undefined;
      if (!meta) {
        checkLockSignal(instance, name, fn);
        continue;
      }
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

/** A method with a `@LockSignal()` parameter must be lock-decorated: nothing else fills that parameter. */
function checkLockSignal(instance: object, name: string, fn: object): void {
  const prototype = Object.getPrototypeOf(instance) as object;
  if (lockSignalParameter(prototype, name) === undefined || getLockedMetadata(fn)) return;
  const where = `${className(prototype)}.${name}()`;
  throw new LockConfigError(
    `@LockSignal() on ${where}: the method has no lock decorator, so there is no lock whose signal to give it. ` +
      'Add @Locked, @ReadLocked, @WriteLocked, @Semaphore or @ScheduledLock, or take the signal from a handle.',
  );
}
