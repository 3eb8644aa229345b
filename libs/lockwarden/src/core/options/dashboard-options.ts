import { LockConfigError } from '../../errors';

/** LockDashboardModule's options with their defaults: what the Nest layer's `ResolvedDashboardOptions` holds. */
export interface DashboardSettings {
  readonly path: string;
  /** Guard classes, run as `@UseGuards()` would. */
  readonly guards: readonly (abstract new (...args: never[]) => unknown)[];
  readonly allowForceUnlock: boolean;
  readonly refreshMs: number;
  readonly limit: number;
  readonly scanBudget: number;
  readonly recentEvents: number;
}

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

/**
 * The dashboard's options, checked (a typed error, at startup) and with their defaults. The
 * options' type, with its Nest guard classes, is the Nest layer's `LockDashboardOptions`.
 */
export function resolveDashboardSettings(raw: unknown = {}): DashboardSettings {
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
    guards: guards as DashboardSettings['guards'],
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
