import { Inject, Injectable } from '@nestjs/common';
import type { BeforeApplicationShutdown, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { LockEngine } from '../core/engine/lock-engine';
import { LeadershipRegistry } from '../core/leader/leadership-registry';
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
    private readonly leaderships: LeadershipRegistry,
    @Inject(LOCK_MODULE_OPTIONS) private readonly options: LockModuleOptions,
  ) {}

  onApplicationBootstrap(): void {
    this.engine.watchdog.start();
    // Checked when it matters, not now: a cron worker calls app.enableShutdownHooks() right
    // after createApplicationContext() resolves, which is after bootstrap.
    this.engine.onFirstGrant(() => this.checkShutdownHooks());
  }

  /** Warns once when SIGTERM would end this process with its locks still in Redis. */
  private checkShutdownHooks(): void {
    if (process.listenerCount('SIGTERM') > 0) return;
    const say = process.env.NODE_ENV === 'test' ? 'debug' : 'warn';
    this.engine.options.logger[say](
      'Shutdown hooks are off: on SIGTERM this process will exit holding its locks, which then stay in Redis ' +
        'until their lease ends. Call app.enableShutdownHooks() (in an HTTP app, before app.listen()) so that ' +
        'locks are released.',
    );
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.engine.drain(this.options.shutdownGraceMs);
  }

  async onApplicationShutdown(): Promise<void> {
    // Leaderships resigned before the drain (LeadershipExplorer); this closes their subscriber.
    await this.leaderships.close();
    await this.engine.close();
  }
}
