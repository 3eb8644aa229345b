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

  /**
   * Resolves on the `count`-th future renewal of `key`, and fails with the events seen if the
   * lock is lost first: a lease lost on a busy machine then fails the test with what happened
   * instead of leaving it waiting for renewals that cannot come.
   */
  async renewals(key: string, count: number): Promise<void> {
    const first = await Promise.race([this.next({ type: 'renewed', key }, count), this.next({ type: 'lost', key })]);
    if (first.type === 'lost') {
      throw new Error(
        `"${key}" was lost before ${count} renewal(s): ${JSON.stringify(this.events.filter((e) => e.key === key))}`,
      );
    }
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
