import { Inject, Injectable } from '@nestjs/common';
import type { BeforeApplicationShutdown, OnApplicationBootstrap } from '@nestjs/common';
import { LOCK_MODULE_OPTIONS } from './lock.module-definition';
import type { LockModuleOptions } from './lock-options.interface';
import { LockService } from './lock.service';

/**
 * The lease watchdog as a Nest provider, following the application's
 * lifecycle. One timer renews every held lock in batched script calls, from
 * each lock's confirmed acquisition, and aborts a lock's signal when renewal
 * has not succeeded by `lease − safetyMarginMs` or `maxHoldMs` is reached.
 *
 * It watches a lock from the moment it is granted (so locks taken in
 * `onModuleInit` are covered too); `onApplicationBootstrap` makes sure it runs.
 * On shutdown (`beforeApplicationShutdown`) it asks in-flight locked work to
 * stop, gives it `shutdownGraceMs` while it keeps renewing, then stops.
 *
 * @example
 * ```ts
 * const watchdog = app.get(LockWatchdog);
 * logger.log(`${watchdog.heldLocks} locks held, last round ran ${watchdog.lagMs} ms late`);
 * ```
 */
@Injectable()
export class LockWatchdog implements OnApplicationBootstrap, BeforeApplicationShutdown {
  constructor(
    private readonly locks: LockService,
    @Inject(LOCK_MODULE_OPTIONS) private readonly options: LockModuleOptions,
  ) {}

  /** How many acquisitions are held (and watched) right now. */
  get heldLocks(): number {
    return this.locks.lockEngine.heldCount;
  }

  /** How late the watchdog runs: its last round's lateness, or how overdue the next one is (0 while idle), in ms. */
  get lagMs(): number {
    return this.locks.lockEngine.watchdog.lagMs;
  }

  /** Renewal rounds run so far. */
  get rounds(): number {
    return this.locks.lockEngine.watchdog.rounds;
  }

  onApplicationBootstrap(): void {
    this.locks.lockEngine.watchdog.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.locks.lockEngine.drain(this.options.shutdownGraceMs);
    this.locks.lockEngine.watchdog.stop();
  }
}
