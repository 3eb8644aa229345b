import { Module } from '@nestjs/common';
import { APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { LockInterceptor } from './interceptors/lock.interceptor';
import { LockConfigurableModule } from './lock.module-definition';
import { engineOptionsProvider, lockExports, lockProviders, redisBackendProvider } from './lock.providers';

/**
 * Provides `LockService`, `LockEngine` and `LockWatchdog`, and installs `LockInterceptor`
 * for the application (locks follow the requests that take them). Import it once,
 * usually with `isGlobal: true`. The store's backend is the Redis topology the options
 * name; `LockTestingModule` swaps in the in-memory one.
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
  imports: [DiscoveryModule],
  providers: [
    engineOptionsProvider,
    redisBackendProvider,
    ...lockProviders,
    { provide: APP_INTERCEPTOR, useClass: LockInterceptor },
  ],
  exports: lockExports,
})
export class LockModule extends LockConfigurableModule {}
