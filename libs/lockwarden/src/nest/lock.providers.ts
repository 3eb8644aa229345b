import { Logger } from '@nestjs/common';
import type { Provider } from '@nestjs/common';
import { LockEngine, resolveEngineOptions, RedisBackend, LeadershipRegistry } from '../core';
import type { LockBackend } from '../core';
import { LeadershipExplorer } from './leadership.explorer';
import { ScheduledLockExplorer } from './scheduled-lock.explorer';
import { LOCK_SERVICE_FOR_DECORATORS } from './decorators/locked.constants';
import { LockLifecycle } from './lock-lifecycle';
import { LOCK_MODULE_OPTIONS } from './lock.module-definition';
import { engineOptionsOf } from './lock-options.interface';
import type { LockModuleOptions } from './lock-options.interface';
import { LockService } from './lock.service';
import { LockWatchdog } from './lock-watchdog';
import { RequestLockScope } from './request-lock-scope';

/**
 * The token the store's backend is provided under, the throttler-storage way: LockModule
 * provides Redis from its options, LockTestingModule the in-memory backend.
 */
export const LOCK_BACKEND = Symbol('lockwarden:backend');

/** LockModule's backend: the Redis topology its options describe. */
export const redisBackendProvider: Provider = {
  provide: LOCK_BACKEND,
  useFactory: (options: LockModuleOptions): LockBackend =>
    new RedisBackend(resolveEngineOptions(engineOptionsOf(options))),
  inject: [LOCK_MODULE_OPTIONS],
};

/** Everything but the backend and the options: the same for LockModule and LockTestingModule. */
export const lockProviders: Provider[] = [
  {
    provide: LockEngine,
    useFactory: (options: LockModuleOptions, backend: LockBackend) =>
      new LockEngine(engineOptionsOf(options), new Logger('Lockwarden'), backend, {
        // A request's client going away aborts the signal of every lock granted while it runs.
        onGrant: RequestLockScope.grantedNow,
      }),
    inject: [LOCK_MODULE_OPTIONS, LOCK_BACKEND],
  },
  {
    provide: LeadershipRegistry,
    useFactory: (engine: LockEngine, backend: LockBackend) => new LeadershipRegistry(engine, backend),
    inject: [LockEngine, LOCK_BACKEND],
  },
  LockService,
  LockWatchdog,
  LockLifecycle,
  LeadershipExplorer,
  ScheduledLockExplorer,
  { provide: LOCK_SERVICE_FOR_DECORATORS, useExisting: LockService },
];

/** What both modules export. */
export const lockExports = [LockService, LockWatchdog, LockEngine, LOCK_SERVICE_FOR_DECORATORS];
