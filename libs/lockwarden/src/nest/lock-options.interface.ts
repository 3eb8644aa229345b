import { ENGINE_OPTION_NAMES, checkKnownNames } from '../core';
import type { LockEngineOptions } from '../core';

/**
 * Options of `LockModule.forRoot()` / `forRootAsync()`.
 *
 * @example
 * ```ts
 * LockModule.forRoot({ redis: process.env.REDIS_URL!, keyPrefix: 'shop:lock:', isGlobal: true });
 * ```
 */
export interface LockModuleOptions extends LockEngineOptions {
  /**
   * The `Retry-After` a busy route answers with (409), in ms, unless its decorator sets its
   * own. Default 1 000: a busy lock's holder renews its lease, so the lease left says nothing
   * about when the holder will be done; set it to how long the work typically takes.
   */
  retryAfterMs?: number;
}

/** Options only the Nest layer reads: everything else goes to the engine. */
const NEST_ONLY = ['retryAfterMs'] as const;

/** Every name the module takes: a typo's error lists them all (`isGlobal` is Nest's own). */
const MODULE_OPTION_NAMES: ReadonlySet<string> = new Set([...ENGINE_OPTION_NAMES, ...NEST_ONLY, 'isGlobal']);

/** The engine's share of the module options. */
export function engineOptionsOf(options: LockModuleOptions): LockEngineOptions {
  if (typeof options === 'object' && options !== null) checkKnownNames('lock module', options, MODULE_OPTION_NAMES);
  const engine: Record<string, unknown> = { ...options };
  for (const name of NEST_ONLY) delete engine[name];
  return engine as LockEngineOptions;
}
