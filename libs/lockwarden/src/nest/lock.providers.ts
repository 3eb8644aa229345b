import { Logger } from '@nestjs/common';
import type { Provider } from '@nestjs/common';
import { checkTopologyGiven, LockEngine, resolveEngineOptions, RedisBackend, LeadershipRegistry } from '../core';
import type { LockBackend, ResolvedEngineOptions } from '../core';
import { LeadershipExplorer } from './leadership.explorer';
import { LockDecoratorsExplorer } from './lock-decorators.explorer';
import { LOCK_SERVICE_FOR_DECORATORS } from './decorators/locked.constants';
import { LockLifecycle } from './lock-lifecycle';
import { LOCK_MODULE_OPTIONS } from './lock.module-definition';
import { engineOptionsOf } from './lock-options.interface';
import type { LockModuleOptions } from './lock-options.interface';
import { LockService } from './lock.service';
import { LockWatchdog } from './lock-watchdog';

/**
 * The token the store's backend is provided under, the throttler-storage way: LockModule
 * provides Redis from its options, LockTestingModule the in-memory backend.
 */
export const LOCK_BACKEND = Symbol('lockwarden:backend');

/** The module's options, resolved once: for its backend and for its engine. */
const LOCK_ENGINE_OPTIONS = Symbol('lockwarden:engine-options');

/** The one Nest logger of the library's own reports. */
const LOGGER = new Logger('Lockwarden');

/**
 * Resolves the module's options once. Where Redis is is checked by the Redis backend's provider,
 * so that a test that overrides LOCK_BACKEND (with the in-memory one) needs no Redis option.
 */
export const engineOptionsProvider: Provider = {
  provide: LOCK_ENGINE_OPTIONS,
  useFactory: (options: LockModuleOptions): ResolvedEngineOptions =>
    resolveEngineOptions(engineOptionsOf(options), LOGGER, true),
  inject: [LOCK_MODULE_OPTIONS],
};

/** LockModule's backend: the Redis topology its options describe (LockConfigError when they name none). */
export const redisBackendProvider: Provider = {
  provide: LOCK_BACKEND,
  useFactory: (resolved: ResolvedEngineOptions): LockBackend => {
    checkTopologyGiven(resolved);
    return new RedisBackend(resolved);
  },
  inject: [LOCK_ENGINE_OPTIONS],
};

/** Everything but the backend and the options: the same for LockModule and LockTestingModule. */
export const lockProviders: Provider[] = [
  {
    provide: LockEngine,
    useFactory: (options: LockModuleOptions, backend: LockBackend, resolved: ResolvedEngineOptions) =>
      new LockEngine(engineOptionsOf(options), LOGGER, backend, { resolved }),
    inject: [LOCK_MODULE_OPTIONS, LOCK_BACKEND, LOCK_ENGINE_OPTIONS],
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
  LockDecoratorsExplorer,
  { provide: LOCK_SERVICE_FOR_DECORATORS, useExisting: LockService },
];

/** What both modules export. */
export const lockExports = [LockService, LockWatchdog, LockEngine, LOCK_SERVICE_FOR_DECORATORS];
