import type { EvictionReport, LockEvent, LockSurvey, SurveyedLock } from '../../core';

/** A lock event of this instance, as the page shows it (events never carry owner tokens). */
export interface DashboardEvent {
  /** When it happened, ms since the epoch (this process's clock). */
  at: number;
  type: LockEvent['type'];
  key: string;
  name?: string;
  fencingToken?: number;
  reason?: string;
  waitedMs?: number;
  heldMs?: number;
  tick?: number;
  /** On 'acquired': a release handed the lock (or permits) straight to this waiter. */
  handedOff?: boolean;
}

/** A held lock with how long it has been held. */
export interface DashboardLock extends SurveyedLock {
  /**
   * How long it has been held: exact when this instance holds it (from its own grant);
   * otherwise since this dashboard first saw it, a lower bound (`heldForExact` false).
   */
  heldForMs: number;
  heldForExact: boolean;
}

/** What the page's data endpoint and its stream send. */
export interface DashboardState extends Omit<LockSurvey, 'locks'> {
  /** The instance serving the page. */
  instanceId: string;
  locks: DashboardLock[];
  /** This instance's recent lock events, oldest first. */
  events: DashboardEvent[];
  allowForceUnlock: boolean;
  /** Set when Redis did not answer this refresh (the lists are then empty). */
  error?: string;
  /** Whether a server may evict lock keys, its policy and the keys it evicted since startup (as health()). */
  eviction: EvictionReport;
}

/** A lock event as the page keeps it: a plain object, dates as ms. */
export function dashboardEvent(event: LockEvent, at: number): DashboardEvent {
  const out: DashboardEvent = { at, type: event.type, key: event.key };
  if (event.name !== undefined) out.name = event.name;
  if (event.fencingToken !== undefined) out.fencingToken = event.fencingToken;
  if (event.reason !== undefined) out.reason = event.reason;
  if (event.waitedMs !== undefined) out.waitedMs = Math.round(event.waitedMs);
  if (event.heldMs !== undefined) out.heldMs = Math.round(event.heldMs);
  if (event.tick !== undefined) out.tick = event.tick.getTime();
  if (event.handedOff) out.handedOff = true;
  return out;
}

/**
 * Remembers when each holding was first seen, so that a lock held by another instance
 * can show "held for at least"; and when this instance's own grants happened, so that its
 * own locks show the exact time.
 */
export class HeldSince {
  private readonly seen = new Map<string, number>();
  private readonly own = new Map<string, { since: number; count: number }>();

  constructor(private readonly instanceId: string) {}

  /** Keeps the time of this instance's grants and forgets them at release or loss. */
  record(event: DashboardEvent): void {
    if (event.type === 'acquired') {
      const mine = this.own.get(event.key);
      if (mine) mine.count++;
      else this.own.set(event.key, { since: event.at, count: 1 });
    } else if (event.type === 'released' || event.type === 'lost') {
      const mine = this.own.get(event.key);
      if (mine && --mine.count <= 0) this.own.delete(event.key);
    }
  }

  /**
   * The survey's held locks, each with its held-for time. On the first page (`prune`),
   * holdings no longer there are forgotten.
   */
  annotate(locks: SurveyedLock[], now: number, prune: boolean): DashboardLock[] {
    const live = new Set<string>();
    const out = locks.map((lock): DashboardLock => {
      const id = `${lock.kind}|${lock.key}|${lock.holders.map((h) => h.instanceId).join(',')}`;
      live.add(id);
      const first = this.seen.get(id) ?? now;
      this.seen.set(id, first);
      const mine = lock.holders.some((h) => h.instanceId === this.instanceId) ? this.own.get(lock.key) : undefined;
      if (mine) return { ...lock, heldForMs: Math.max(0, now - mine.since), heldForExact: true };
      return { ...lock, heldForMs: now - first, heldForExact: false };
    });
    if (prune) for (const id of this.seen.keys()) if (!live.has(id)) this.seen.delete(id);
    return out;
  }
}
