import { Module } from '@nestjs/common';
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
  providers: [LockService],
  exports: [LockService],
})
export class LockModule extends LockConfigurableModule {}
