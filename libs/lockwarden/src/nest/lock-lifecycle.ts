import { Inject, Injectable } from '@nestjs/common';
import type { BeforeApplicationShutdown, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { LockEngine, LeadershipRegistry } from '../core';
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
  private bootstrappedAt = 0;
  private recheck: NodeJS.Timeout | undefined;
  private stopListening: (() => void) | undefined;

  constructor(
    private readonly engine: LockEngine,
    private readonly leaderships: LeadershipRegistry,
    @Inject(LOCK_MODULE_OPTIONS) private readonly options: LockModuleOptions,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.engine.watchdog.start();
    this.bootstrappedAt = performance.now();
    // Checked when it matters, not now: a cron worker calls app.enableShutdownHooks() right
    // after createApplicationContext() resolves, which is after bootstrap. So at the first
    // grant (a lock's or a permit's), soon after it.
    this.stopListening?.();
    const stop = this.engine.subscribe((event) => {
      if (event.type !== 'acquired') return;
      stop();
      setImmediate(() => this.checkShutdownHooks());
    });
    this.stopListening = stop;
    await this.firstConnection();
  }

  /**
   * Waits for Redis to answer once, bounded by `commandTimeoutMs`, so the app's first requests
   * find a connection ready. Never fails the boot: an app may start before its Redis. When
   * Redis does not answer, one warning says so (a refused connection is said already, once, by
   * the connection's own watch).
   */
  private async firstConnection(): Promise<void> {
    const { commandTimeoutMs, logger } = this.engine.options;
    const report = await this.engine.health(commandTimeoutMs).catch(() => undefined);
    if (!report || report.reachable || report.failure === 'refused') return;
    // "No answer" is what the first words say already; any other failure is named.
    const why = report.error && report.failure !== 'no-answer' ? ` (${report.error})` : '';
    logger.warn(
      `Redis did not answer within ${commandTimeoutMs} ms (commandTimeoutMs) at bootstrap${why}: the app ` +
        'starts anyway, and acquires fail with LockBackendError until it answers.',
    );
  }

  /**
   * Warns once when SIGTERM would end this process with its locks still in Redis. A standalone
   * context can turn its hooks on only once createApplicationContext() has resolved, after
   * every bootstrap hook, and a lock taken in one of those hooks comes before that. Nest tells
   * no provider when bootstrap is over, so hooks found off within the first lease after
   * bootstrap are looked at again when that lease is over; only then are they truly off.
   */
  private checkShutdownHooks(): void {
    const logger = this.engine.options.logger;
    if (process.listenerCount('SIGTERM') > 0) {
      if (this.recheck) logger.debug('Shutdown hooks are on: SIGTERM releases the locks first.');
      return;
    }
    const wait = this.bootstrappedAt + this.engine.options.leaseMs - performance.now();
    if (wait > 0 && !this.recheck) {
      logger.debug('Shutdown hooks are not on yet; looking again once the application has had time to start.');
      this.recheck = setTimeout(() => this.checkShutdownHooks(), wait);
      this.recheck.unref();
      return;
    }
    const say = process.env.NODE_ENV === 'test' ? 'debug' : 'warn';
    logger[say](
      'Shutdown hooks are off: on SIGTERM this process will exit holding its locks, which then stay in Redis ' +
        'until their lease ends. Call app.enableShutdownHooks() (in an HTTP app, before app.listen()) so that ' +
        'locks are released.',
    );
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearTimeout(this.recheck);
    this.stopListening?.();
    await this.engine.drain(this.options.shutdownGraceMs);
  }

  async onApplicationShutdown(): Promise<void> {
    // Leaderships resigned before the drain (LeadershipExplorer); this closes their subscriber.
    await this.leaderships.close();
    await this.engine.close();
  }
}
