import { Module } from '@nestjs/common';
import type { DynamicModule } from '@nestjs/common';
import { APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { MemoryLockBackend } from '../../core';
import { LockInterceptor } from '../interceptors/lock.interceptor';
import { LOCK_MODULE_OPTIONS } from '../lock.module-definition';
import type { LockModuleOptions } from '../lock-options.interface';
import { engineOptionsProvider, LOCK_BACKEND, lockExports, lockProviders } from '../lock.providers';

/** Options of `LockTestingModule.forRoot()`: the module's options, without a Redis. */
export interface LockTestingOptions extends Omit<LockModuleOptions, 'redis' | 'quorum' | 'replicaAck'> {
  /**
   * The in-memory "Redis". Share one between several testing modules to make them contend
   * like instances of one service. Default: a new one per module.
   */
  backend?: MemoryLockBackend;
  /** Make LockService available to every module. Default false, as with LockModule. */
  isGlobal?: boolean;
}

/**
 * A test double of `LockModule` for your unit tests: the same `LockService`,
 * decorators, interceptor and watchdog, on an in-memory backend instead of
 * Redis. Reentrancy, read/write locks, fencing tokens, timeouts and `onBusy`
 * behave as they do on Redis, because the engine is the same; only the store
 * of the lock data differs, and a shared behaviour suite holds the two to
 * the same results. No Redis server, no network, nothing to close.
 *
 * It proves your code's locking logic, not your Redis deployment: use the
 * real module in end-to-end tests.
 *
 * @example
 * ```ts
 * import { LockTestingModule } from 'lockwarden/testing';
 *
 * const moduleRef = await Test.createTestingModule({
 *   imports: [LockTestingModule.forRoot()],
 *   providers: [PayoutService],
 * }).compile();
 * await moduleRef.init();
 * ```
 */
@Module({})
export class LockTestingModule {
  static forRoot(options: LockTestingOptions = {}): DynamicModule {
    const { backend = new MemoryLockBackend(), isGlobal = false, ...rest } = options;
    const moduleOptions: LockModuleOptions = { ...rest, metrics: rest.metrics ?? false, traces: rest.traces ?? false };
    return {
      module: LockTestingModule,
      global: isGlobal,
      imports: [DiscoveryModule],
      providers: [
        { provide: LOCK_MODULE_OPTIONS, useValue: moduleOptions },
        { provide: MemoryLockBackend, useValue: backend },
        { provide: LOCK_BACKEND, useExisting: MemoryLockBackend },
        engineOptionsProvider,
        ...lockProviders,
        { provide: APP_INTERCEPTOR, useClass: LockInterceptor },
      ],
      exports: [...lockExports, MemoryLockBackend],
    };
  }
}
