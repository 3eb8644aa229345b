import type { LockEvent } from '../../libs/lockwarden/src/core/observe/events';

type Match = Partial<LockEvent> | ((e: LockEvent) => boolean);

interface Pending {
  match: (e: LockEvent) => boolean;
  count: number;
  resolve: (e: LockEvent) => void;
}

/**
 * Records lock events and lets a test wait for one to happen, so tests wait on
 * events rather than on sleeps. A wait must not miss an event that came before it began:
 * either it is set up before the action that causes the event (`next`), or it looks back to
 * a mark taken before that action (`since`).
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

  /** The log's position now, for `since`: take it before the action whose events a later wait needs. */
  mark(): number {
    return this.events.length;
  }

  /**
   * Resolves with the `count`-th event matching `match` from position `from` (a `mark()`) on,
   * whether it is already in the log or still to come: a wait that begins late still sees it.
   */
  since(from: number, match: Match, count = 1): Promise<LockEvent> {
    const fn = typeof match === 'function' ? match : (e: LockEvent) => matches(e, match);
    let left = count;
    for (const event of this.events.slice(from)) {
      if (fn(event) && --left === 0) return Promise.resolve(event);
    }
    return new Promise((resolve) => this.pending.push({ match: fn, count: left, resolve }));
  }

  /**
   * Resolves on the `count`-th matching event still to come (default: the next one). Call it
   * before the action that causes the event; a wait that can only begin after the action uses
   * `since` with a mark taken before it.
   */
  next(match: Match, count = 1): Promise<LockEvent> {
    return this.since(this.mark(), match, count);
  }

  /**
   * Resolves on the `count`-th future renewal of `key`, and fails with the events seen if `key` is
   * lost first: a lease lost on a busy machine then fails the test with what happened instead of
   * leaving it waiting for renewals that cannot come. A loss anywhere in the log counts, one before
   * this wait began too, so use a key the log has not seen lost before.
   */
  async renewals(key: string, count: number): Promise<void> {
    const first = await Promise.race([
      this.next({ type: 'renewed', key }, count),
      this.since(0, { type: 'lost', key }),
    ]);
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
