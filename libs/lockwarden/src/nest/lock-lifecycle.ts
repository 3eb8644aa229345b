import { Inject, Injectable } from '@nestjs/common';
import type { BeforeApplicationShutdown, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { LockEngine } from '../core/engine/lock-engine';
import { LOCK_MODULE_OPTIONS } from './lock.module-definition';
import type { LockModuleOptions } from './lock-options.interface';

/**
 * The one owner of the locks' start and stop in a Nest app. The watchdog runs from the
 * first grant (so locks taken in `onModuleInit` are covered); bootstrap makes sure it runs.
 * On shutdown it asks locked work to stop and gives it `shutdownGraceMs` while the watchdog
 * keeps renewing (`beforeApplicationShutdown`), then closes the engine
 * (`onApplicationShutdown`), which leaves to their lease the locks of work still running.
 *
 * @example
 * ```ts
 * // Provided by LockModule; Nest calls it. Shutdown hooks must be on for SIGTERM:
 * app.enableShutdownHooks();
 * ```
 */
@Injectable()
export class LockLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  constructor(
    private readonly engine: LockEngine,
    @Inject(LOCK_MODULE_OPTIONS) private readonly options: LockModuleOptions,
  ) {}

  onApplicationBootstrap(): void {
    this.engine.watchdog.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.engine.drain(this.options.shutdownGraceMs);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.engine.close();
  }
}
