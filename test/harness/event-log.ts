import type { LockEvent } from '../../libs/lockwarden/src/core/observe/events';

interface Pending {
  match: (e: LockEvent) => boolean;
  count: number;
  resolve: (e: LockEvent) => void;
}

/**
 * Records lock events and lets a test wait for one to happen, so tests wait on
 * events rather than on sleeps.
 */
export class EventLog {
  readonly events: LockEvent[] = [];
  private pending: Pending[] = [];

  readonly listener = (event: LockEvent): void => {
    this.events.push(event);
    this.pending = this.pending.filter((p) => {
      if (!p.match(event)) return true;
      p.count--;
      if (p.count > 0) return true;
      p.resolve(event);
      return false;
    });
  };

  /** Resolves on the `count`-th future event matching (default: the next one). */
  next(match: Partial<LockEvent> | ((e: LockEvent) => boolean), count = 1): Promise<LockEvent> {
    const fn = typeof match === 'function' ? match : (e: LockEvent) => matches(e, match);
    return new Promise((resolve) => this.pending.push({ match: fn, count, resolve }));
  }

  count(match: Partial<LockEvent>): number {
    return this.events.filter((e) => matches(e, match)).length;
  }
}

function matches(e: LockEvent, partial: Partial<LockEvent>): boolean {
  return Object.entries(partial).every(([k, v]) => (e as unknown as Record<string, unknown>)[k] === v);
}

/** Resolves when the signal aborts, with its reason. */
export function aborted(signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
}
