import { LockConfigError } from '../../errors';
import { checkKnownNames, checkOptionsObject, describe } from '../options/options';
import { checkKey } from '../backend/lock-keys';
import type { LeaderTerm } from './term-log';

/**
 * Options of `Leadership.campaign()` and `Leadership.contend()`.
 *
 * @example
 * ```ts
 * await leadership.campaign({ signal: AbortSignal.timeout(60_000) });
 * ```
 */
export interface CampaignOptions {
  /** Gives up waiting to be elected: `campaign()` rejects with `LockAbortedError`, `contend()` stops. */
  signal?: AbortSignal;
}

/**
 * Options of `Leadership.changes()`.
 *
 * @example
 * ```ts
 * for await (const change of leadership.changes({ signal: controller.signal })) log(change);
 * ```
 */
export interface ChangesOptions {
  /** Ends the iteration. */
  signal?: AbortSignal;
}

/**
 * Called when this instance gains or loses a leadership, with the term concerned.
 *
 * @example
 * ```ts
 * const listener: LeadershipListener = (event, term) => log(`${event} ${term.fencingToken}`);
 * leadership.onChange(listener);
 * ```
 */
export type LeadershipListener = (event: 'gained' | 'lost', term: LeaderTerm) => void | Promise<void>;

const SIGNAL_ONLY: ReadonlySet<string> = new Set(['signal']);

/** The signal of `campaign()`, `contend()` or `changes()` options, checked before anything reaches Redis. */
export function checkSignalOptions(what: string, opts: unknown, key: string): AbortSignal | undefined {
  const options = checkOptionsObject(what, opts, key);
  checkKnownNames(what, options, SIGNAL_ONLY, key);
  return checkSignal(options.signal, key);
}

function checkSignal(signal: unknown, key: string): AbortSignal | undefined {
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new LockConfigError(`signal must be an AbortSignal, got ${describe(signal)}.`, key);
  }
  return signal;
}

/**
 * A leadership's name: a non-empty string whose lock key (`leader:<name>`) is a valid key.
 * Returns that key. `what` names the caller: `leadership()`, or a decorator where it is applied.
 */
export function checkLeadershipName(name: unknown, what: string): string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new LockConfigError(`${what} needs a leadership name, a non-empty string, got ${describe(name)}.`);
  }
  return checkKey(`leader:${name}`, `lock key of ${what.replace(/\(\)$/, '')}('${name.slice(0, 40)}')`);
}
