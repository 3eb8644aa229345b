import type { CanActivate, ModuleMetadata, Type } from '@nestjs/common';
import { resolveDashboardSettings } from '../../core/options/dashboard-options';

/**
 * How `LockDashboardModule.forRoot()` mounts the dashboard.
 *
 * @example
 * ```ts
 * LockDashboardModule.forRoot({ path: '/ops/locks', guards: [AdminGuard], allowForceUnlock: true });
 * ```
 */
export interface LockDashboardOptions {
  /** Where the page is mounted, under any global prefix (default `/locks`). Its data lives under `<path>/api`. */
  path?: string;
  /**
   * Guards run before the page, its data, its stream and force-unlock, as `@UseGuards()` would:
   * the dashboard shows every lock's holder, so put it behind your admin guard.
   */
  guards?: Type<CanActivate>[];
  /** Modules the guards' own dependencies come from. */
  imports?: ModuleMetadata['imports'];
  /**
   * Shows a force-unlock button and accepts its request (default false). Dangerous: until
   * the holder's next renewal, two holders may run at once (see `LockService.forceUnlock`).
   */
  allowForceUnlock?: boolean;
  /** How often an open page is refreshed from Redis, in ms (default 750, so that it is at most a second behind; 250 to 60 000). */
  refreshMs?: number;
  /** At most this many locks, semaphores and leaderships each per page (default 100; up to 1 000). */
  limit?: number;
  /** At most this many keys SCAN looks at per refresh, over every master (default 10 000). */
  scanBudget?: number;
  /** How many of this instance's recent lock events the page shows (default 200; up to 10 000). */
  recentEvents?: number;
}

export type ResolvedDashboardOptions = Required<Omit<LockDashboardOptions, 'imports'>>;

/** Checks the options (a typed error, at startup) and fills in the defaults (core/options/dashboard-options.ts). */
export function resolveDashboardOptions(options: LockDashboardOptions = {}): ResolvedDashboardOptions {
  return resolveDashboardSettings(options) as ResolvedDashboardOptions;
}
