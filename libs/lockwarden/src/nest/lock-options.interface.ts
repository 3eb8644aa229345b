import type { LockEngineOptions } from '../core/engine/engine-options';

/**
 * Options of `LockModule.forRoot()` / `forRootAsync()`.
 *
 * @example
 * ```ts
 * LockModule.forRoot({ redis: process.env.REDIS_URL!, keyPrefix: 'shop:lock:', isGlobal: true });
 * ```
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- the Nest-level options are the engine's today; module-only settings land here
export interface LockModuleOptions extends LockEngineOptions {}
