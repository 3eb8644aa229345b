import { Module } from '@nestjs/common';
import type { DynamicModule } from '@nestjs/common';
import { resolveDashboardOptions } from './dashboard-options';
import type { LockDashboardOptions } from './dashboard-options';
import { dashboardController } from './lock-dashboard.controller';
import { LOCK_DASHBOARD_OPTIONS, LockDashboard } from './lock-dashboard.service';

/**
 * A live web page of the locks, for operators: who holds what (across every instance, read
 * from Redis), since when, the fencing token, the lease left, the waiters and the fair
 * queue; read/write holders; semaphores; leaderships and their recent terms; and this
 * instance's recent lock events on a small timeline. Never an owner token. Works in any
 * Nest HTTP app (Express or Fastify), offline: no CDN, no build step.
 *
 * Import it beside `LockModule`, from `lockwarden/dashboard`. Put it behind your admin guard.
 *
 * @example
 * ```ts
 * import { LockDashboardModule } from 'lockwarden/dashboard';
 *
 * @Module({
 *   imports: [
 *     LockModule.forRoot({ redis: process.env.REDIS_URL, isGlobal: true }),
 *     LockDashboardModule.forRoot({ path: '/locks', guards: [AdminGuard] }),
 *   ],
 * })
 * export class AppModule {}
 * ```
 */
@Module({})
export class LockDashboardModule {
  static forRoot(options: LockDashboardOptions = {}): DynamicModule {
    const resolved = resolveDashboardOptions(options);
    return {
      module: LockDashboardModule,
      imports: options.imports ?? [],
      controllers: [dashboardController(resolved)],
      providers: [{ provide: LOCK_DASHBOARD_OPTIONS, useValue: resolved }, LockDashboard],
      exports: [LockDashboard],
    };
  }
}
