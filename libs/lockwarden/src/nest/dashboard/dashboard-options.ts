import type { CanActivate, ModuleMetadata, Type } from '@nestjs/common';
import { LockConfigError } from '../../errors';

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

const NAMES = new Set([
  'path',
  'guards',
  'imports',
  'allowForceUnlock',
  'refreshMs',
  'limit',
  'scanBudget',
  'recentEvents',
]);

/** Checks the options (a typed error, at startup, also for a caller without types) and fills in the defaults. */
export function resolveDashboardOptions(raw: LockDashboardOptions = {}): ResolvedDashboardOptions {
  if (typeof raw !== 'object' || raw === null) fail('options must be an object');
  const options = raw as Record<string, unknown>;
  for (const name of Object.keys(options)) {
    if (!NAMES.has(name)) fail(`unknown option '${name}' (it takes ${[...NAMES].join(', ')})`);
  }
  const path = options.path ?? '/locks';
  if (typeof path !== 'string' || !/^\/?[A-Za-z0-9._~\-/]*$/.test(path) || path.replace(/\//g, '') === '') {
    fail(`path must be a URL path such as '/locks' (got ${JSON.stringify(path)})`);
  }
  const guards: unknown = options.guards ?? [];
  if (!Array.isArray(guards) || guards.some((g) => typeof g !== 'function')) {
    fail('guards must be an array of guard classes');
  }
  if (options.allowForceUnlock !== undefined && typeof options.allowForceUnlock !== 'boolean') {
    fail('allowForceUnlock must be true or false');
  }
  return {
    path: `/${path.replace(/^\/+|\/+$/g, '')}`,
    guards: guards as Type<CanActivate>[],
    allowForceUnlock: options.allowForceUnlock ?? false,
    refreshMs: whole('refreshMs', options.refreshMs, 750, 250, 60_000),
    limit: whole('limit', options.limit, 100, 1, 1_000),
    scanBudget: whole('scanBudget', options.scanBudget, 10_000, 100, 10_000_000),
    recentEvents: whole('recentEvents', options.recentEvents, 200, 1, 10_000),
  };
}

function whole(name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    fail(`${name} must be a whole number from ${min} to ${max} (got ${String(value)})`);
  }
  return value;
}

function fail(message: string): never {
  throw new LockConfigError(`LockDashboardModule: ${message}`);
}
