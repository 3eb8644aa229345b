import { LockConfigError } from '../../errors';
import { describe, describeKey, quoteKey } from '../../errors/key-text';

export { describe, describeKey } from '../../errors/key-text';

/** Largest timer delay Node accepts, and so the largest lease or wait we allow. */
export const MAX_MS = 2 ** 31 - 1;
/** Shortest lease that survives a round trip and a renewal. */
export const MIN_LEASE_MS = 10;

/** The most permits one semaphore may have: far beyond any real limit, and exact in Lua. */
export const MAX_PERMITS = 2 ** 31 - 1;

export function checkInteger(field: string, value: unknown, min: number, max: number, key?: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new LockConfigError(
      `${field} must be an integer from ${min} to ${max} (milliseconds), got ${describe(value)}.`,
      key,
    );
  }
  return value;
}

/** What to write instead of an option name the library had before its first release (see CHANGELOG). */
const RETIRED: Readonly<Record<string, string>> = {
  ttlMs: 'for a lease that is not renewed, write { leaseMs: n, renew: false }',
  clockTokens: 'it is gone: fencing tokens always follow the server clock',
};

/** Rejects option names we do not know, so a typo such as `waitMS` is never silently ignored. */
export function checkKnownNames(what: string, options: object, allowed: ReadonlySet<string>, key?: string): void {
  for (const name of Object.keys(options)) {
    if (!allowed.has(name)) {
      const instead = Object.hasOwn(RETIRED, name) ? ` (${RETIRED[name]})` : '';
      throw new LockConfigError(
        `Unknown ${what} option ${quoteKey(name)}${instead}. Allowed: ${[...allowed].sort().join(', ')}.`,
        key,
      );
    }
  }
}

export function checkOptionsObject(what: string, options: unknown, key?: string): Record<string, unknown> {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new LockConfigError(`${what} options must be an object, got ${describe(options)}.`, key);
  }
  return options as Record<string, unknown>;
}

export function checkPermits(field: string, value: unknown, max: number, key?: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new LockConfigError(`${field} must be an integer from 1 to ${max}, got ${describe(value)}.`, key);
  }
  return value;
}

/** An optional flag: undefined when not given, else it must be a boolean. */
export function checkBoolean(field: string, value: unknown, key?: string): boolean | undefined {
  if (value !== undefined && typeof value !== 'boolean') {
    throw new LockConfigError(`${field} must be a boolean, got ${describe(value)}.`, key);
  }
  return value;
}

/** An acquire's own signal, when it gave one. */
export function checkSignal(value: unknown, key?: string): AbortSignal | undefined {
  if (value !== undefined && !(value instanceof AbortSignal)) {
    throw new LockConfigError(`signal must be an AbortSignal, got ${describe(value)}.`, key);
  }
  return value;
}

/** A lock's low-cardinality name in metrics and events, when it gave one. */
export function checkName(value: unknown, key?: string): string | undefined {
  if (value !== undefined && (typeof value !== 'string' || value.length === 0 || value.length > 200)) {
    throw new LockConfigError(
      `name must be a non-empty string of at most 200 characters, got ${describe(value)}.`,
      key,
    );
  }
  return value;
}

/**
 * A callback argument (the work of `withLock`, `withPermit` or `runIfLeader`, a listener)
 * must be a function: refused before anything touches Redis. `purpose` says what it is for.
 */
export function checkFunction(method: string, fn: unknown, purpose = '', key?: string): void {
  if (typeof fn !== 'function') {
    throw new LockConfigError(`${method} needs a function${purpose}, got ${describe(fn)}.`, key);
  }
}

/** A `with…Lock` call's work must be a function (checkFunction), named with its lock. */
export function checkCallback(method: string, key: unknown, fn: unknown): void {
  checkFunction(method, fn, ` to run under lock ${describeKey(key)}`);
}

/** An optional integer option: `fallback` when it was not given, else checked as checkInteger does. */
export function integerOr<T>(
  name: string,
  value: unknown,
  fallback: T,
  min: number,
  max: number,
  key?: string,
): number | T {
  return value === undefined ? fallback : checkInteger(name, value, min, max, key);
}
