/** One line an instance reported, as the timeline reads it: lock lines carry `type`, `key` and `token`. */
export interface TimelineEvent {
  readonly event: string;
  readonly t: number;
  readonly [field: string]: unknown;
}

/** An instance's lock events, and when it was killed if it was. */
export interface TimelineInstance {
  readonly id: string;
  readonly events: readonly TimelineEvent[];
  readonly killedAt?: number | undefined;
}

/** One grant of a lock or permit, from its `acquired` line to its `released` or `lost` line. */
export interface Hold {
  readonly row: number;
  readonly key: string;
  readonly token: number | undefined;
  readonly from: number;
  readonly to: number;
  readonly end: 'released' | 'lost' | 'killed' | 'open';
  /** A killed holder's lease runs on until the next holder takes the lock: until then. */
  readonly leaseUntil?: number;
  readonly permit: boolean;
}

/**
 * Pairs each instance's `acquired` lines with the `released` or `lost` line of the same key
 * and fencing token: a semaphore's permits of one key overlap on one instance, so the key
 * alone would end the wrong grant.
 */
export function holdsOf(instances: readonly TimelineInstance[], permitKeys: ReadonlySet<string>): Hold[] {
  const holds: Hold[] = [];
  instances.forEach((instance, row) => {
    const open = new Map<string, { key: string; token: number | undefined; t: number }>();
    for (const e of instance.events) {
      if (e.event !== 'lock' || typeof e.key !== 'string') continue;
      const token = typeof e.token === 'number' ? e.token : undefined;
      const id = `${e.key} ${token ?? ''}`;
      if (e.type === 'acquired') {
        open.set(id, { key: e.key, token, t: e.t });
        continue;
      }
      if (e.type !== 'released' && e.type !== 'lost') continue;
      const start = open.get(id) ?? [...open.values()].find((o) => o.key === e.key);
      if (!start) continue;
      open.delete(`${start.key} ${start.token ?? ''}`);
      holds.push({ ...start, row, from: start.t, to: e.t, end: e.type, permit: permitKeys.has(start.key) });
    }
    const last = instance.events.at(-1)?.t;
    for (const start of open.values()) {
      const killed = instance.killedAt !== undefined;
      const to = Math.max(start.t, instance.killedAt ?? last ?? start.t);
      holds.push({
        ...start,
        row,
        from: start.t,
        to,
        end: killed ? 'killed' : 'open',
        permit: permitKeys.has(start.key),
      });
    }
  });
  // A killed holder's lock stays taken until its lease runs out: show that until the next holder took it.
  return holds.map((hold) => {
    if (hold.end !== 'killed' || hold.permit) return hold;
    const next = holds
      .filter((h) => h !== hold && h.key === hold.key && h.from >= hold.to)
      .reduce<Hold | undefined>((a, h) => (a === undefined || h.from < a.from ? h : a), undefined);
    return next ? { ...hold, leaseUntil: next.from } : hold;
  });
}

/** Permit grants of one instance close together on the picture, drawn and labelled as one. */
export interface PermitBurst {
  readonly row: number;
  readonly key: string;
  readonly from: number;
  readonly to: number;
  readonly holds: readonly Hold[];
}

/**
 * Groups each instance's permit grants into bursts: grants that start within `gap` of the
 * burst's end so far join it, so one announcement of ten winners is one mark, not ten.
 */
export function permitBursts(holds: readonly Hold[], gap: number): PermitBurst[] {
  const bursts: PermitBurst[] = [];
  const permits = holds.filter((h) => h.permit).sort((a, b) => a.row - b.row || a.from - b.from);
  let current: { row: number; key: string; from: number; to: number; holds: Hold[] } | undefined;
  for (const hold of permits) {
    if (current && current.row === hold.row && current.key === hold.key && hold.from <= current.to + gap) {
      current.holds.push(hold);
      current.to = Math.max(current.to, hold.to);
      continue;
    }
    current = { row: hold.row, key: hold.key, from: hold.from, to: hold.to, holds: [hold] };
    bursts.push(current);
  }
  return bursts;
}

/** Spreads one instance's holds over as few lanes as can take them without two touching. */
export function packLanes<T>(items: readonly T[], extent: (item: T) => readonly [number, number], gap: number): T[][] {
  const lanes: { end: number; items: T[] }[] = [];
  const sorted = [...items].sort((a, b) => extent(a)[0] - extent(b)[0]);
  for (const item of sorted) {
    const [start, end] = extent(item);
    const lane = lanes.find((l) => l.end + gap <= start);
    if (lane) {
      lane.items.push(item);
      lane.end = end;
    } else lanes.push({ end, items: [item] });
  }
  return lanes.map((l) => l.items);
}
