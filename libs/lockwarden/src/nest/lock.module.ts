import { Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { LOCK_SERVICE_FOR_DECORATORS } from './decorators/locked.constants';
import { LockInterceptor } from './interceptors/lock.interceptor';
import { LockConfigurableModule } from './lock.module-definition';
import { LockService } from './lock.service';
import { LockWatchdog } from './lock-watchdog';

/**
 * Provides `LockService` and `LockWatchdog`, and installs `LockInterceptor`
 * for the application (locks follow the requests that take them). Import it
 * once, usually with `isGlobal: true`.
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [
 *     LockModule.forRootAsync({
 *       isGlobal: true,
 *       inject: [ConfigService],
 *       useFactory: (config: ConfigService) => ({ redis: config.getOrThrow('REDIS_URL') }),
 *     }),
 *   ],
 * })
 * export class AppModule {}
 * ```
 */
@Module({
  providers: [
    LockService,
    LockWatchdog,
    { provide: LOCK_SERVICE_FOR_DECORATORS, useExisting: LockService },
    { provide: APP_INTERCEPTOR, useClass: LockInterceptor },
  ],
  exports: [LockService, LockWatchdog, LOCK_SERVICE_FOR_DECORATORS],
})
export class LockModule extends LockConfigurableModule {}
