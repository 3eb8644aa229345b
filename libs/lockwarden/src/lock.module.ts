import { Module } from '@nestjs/common';
import { LOCK_SERVICE_FOR_DECORATORS } from './decorators/locked.constants';
import { LockInterceptor } from './interceptors/lock.interceptor';
import { LockConfigurableModule } from './lock.module-definition';
import { LockService } from './lock.service';

/**
 * Provides `LockService`. Import it once, usually with `isGlobal: true`.
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
  providers: [LockService, { provide: LOCK_SERVICE_FOR_DECORATORS, useExisting: LockService }, LockInterceptor],
  exports: [LockService, LOCK_SERVICE_FOR_DECORATORS, LockInterceptor],
})
export class LockModule extends LockConfigurableModule {}
