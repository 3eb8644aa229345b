import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { Adapter } from './adapters';
import { percentile } from './stats';

/** Absolute milliseconds with sub-ms precision, comparable across processes on one machine. */
export const now = (): number => performance.timeOrigin + performance.now();

/** One lock cycle of one worker. */
export interface Cycle {
  readonly worker: string;
  readonly requested: number;
  readonly acquired: number;
  readonly released: number;
}

export interface ContentionResult {
  readonly cyclesPerSec: number;
  readonly utilisation: number;
  readonly fairness: number;
  readonly waitP50: number;
  readonly waitP99: number;
  readonly handoffP50: number;
  readonly handoffP99: number;
  readonly overlaps: number;
}

/**
 * Scenario 1: acquire+release back to back on one key. `measured` runs after the warm-up, right
 * before the timed loop (the caller resets Redis' command statistics there).
 */
export async function serial(
  adapter: Adapter,
  ms: number,
  measured?: () => Promise<unknown>,
): Promise<{ opsPerSec: number; p50: number; p99: number; cycles: number }> {
  const key = `serial:${adapter.name}`;
  const lat: number[] = [];
  const warm = performance.now() + Math.min(200, ms / 4);
  while (performance.now() < warm) await (await adapter.acquire(key)).release();
  await measured?.();
  const start = performance.now();
  while (performance.now() - start < ms) {
    const t = performance.now();
    await (await adapter.acquire(key)).release();
    lat.push(performance.now() - t);
  }
  return {
    opsPerSec: (lat.length * 1000) / (performance.now() - start),
    p50: percentile(lat, 50),
    p99: percentile(lat, 99),
    cycles: lat.length,
  };
}

/** The floor of a serial cycle: p50 of one ioredis PING round trip, on a connection of its own. */
export async function pingRoundTrip(url: string, ms: number): Promise<number> {
  const client = new Redis(url);
  try {
    const lat: number[] = [];
    const warm = performance.now() + Math.min(200, ms / 4);
    while (performance.now() < warm) await client.ping();
    const start = performance.now();
    while (performance.now() - start < ms) {
      const t = performance.now();
      await client.ping();
      lat.push(performance.now() - t);
    }
    return percentile(lat, 50);
  } finally {
    client.disconnect();
  }
}

/** Redis' own CPU in µs since the last CONFIG RESETSTAT, summed over every command but the bench's own. */
export async function serverMicros(admin: Redis): Promise<number> {
  const stats = await admin.info('commandstats');
  let usec = 0;
  for (const [, command, micros] of stats.matchAll(/^cmdstat_([^:]+):calls=\d+,usec=(\d+)/gm)) {
    if (command !== 'info' && command !== 'config') usec += Number(micros);
  }
  return usec;
}

let freshRun = 0;

/**
 * Scenario 2: `flows` concurrent flows, each on its own key; with `fresh`, every cycle on a
 * name never seen before, as per-entity locks (`order:{0.id}`) mostly are.
 */
export async function distinct(adapter: Adapter, ms: number, flows = 64, fresh = false): Promise<number> {
  let count = 0;
  const run = async (f: number, until: number): Promise<void> => {
    const base = `distinct:${adapter.name}:${f}`;
    const tag = ++freshRun;
    for (let i = 0; performance.now() < until; i++) {
      await (await adapter.acquire(fresh ? `${base}:${tag}:${i}` : base)).release();
      count++;
    }
  };
  await Promise.all(Array.from({ length: flows }, (_, f) => run(f, performance.now() + Math.min(200, ms / 4))));
  count = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: flows }, (_, f) => run(f, start + ms)));
  return (count * 1000) / (performance.now() - start);
}

/** Scenario 3 (and 4 and 5 in pieces): workers loop acquire, hold, release, think on one key. */
export async function contend(
  adapter: Adapter,
  key: string,
  workers: string[],
  until: number,
  holdMs = 2,
  thinkMs = 2,
): Promise<Cycle[]> {
  const cycles: Cycle[] = [];
  await Promise.all(
    workers.map(async (worker) => {
      while (now() < until) {
        const requested = now();
        const held = await adapter.acquire(key);
        const acquired = now();
        await sleep(holdMs);
        const released = now();
        await held.release();
        cycles.push({ worker, requested, acquired, released });
        // No think time: ask again at once, as a hot loop does (a 0 ms timer still waits a tick).
        if (thinkMs > 0) await sleep(thinkMs);
      }
    }),
  );
  return cycles;
}

/** Utilisation, fairness, waits and hand-offs of a run of cycles (from one or many processes). */
export function analyse(cycles: readonly Cycle[], from: number, to: number): ContentionResult {
  const sorted = [...cycles].sort((a, b) => a.acquired - b.acquired);
  const wall = to - from;
  let held = 0;
  let overlaps = 0;
  const handoffs: number[] = [];
  const perWorker = new Map<string, number>();
  for (let i = 0; i < sorted.length; i++) {
    const c = sorted[i];
    held += c.released - c.acquired;
    perWorker.set(c.worker, (perWorker.get(c.worker) ?? 0) + 1);
    const prev = sorted[i - 1];
    if (!prev) continue;
    if (c.acquired < prev.released) overlaps++;
    // A hand-off: the next holder is another worker that was already waiting when the lock was let go.
    else if (prev.worker !== c.worker && c.requested < prev.released) handoffs.push(c.acquired - prev.released);
  }
  const counts = [...perWorker.values()];
  const waits = sorted.map((c) => c.acquired - c.requested);
  return {
    cyclesPerSec: (sorted.length * 1000) / wall,
    utilisation: held / wall,
    fairness: counts.length ? Math.min(...counts) / Math.max(...counts) : 0,
    waitP50: percentile(waits, 50),
    waitP99: percentile(waits, 99),
    handoffP50: percentile(handoffs, 50),
    handoffP99: percentile(handoffs, 99),
    overlaps,
  };
}

/** Scenario 3 / 5: `workers` in this process on one key for `ms`. */
export async function contention(adapter: Adapter, ms: number, workers = 8): Promise<ContentionResult> {
  const key = `contended:${adapter.name}:${Date.now()}`;
  await contend(adapter, key, ['w0'], now() + Math.min(200, ms / 4)); // warm the connection and scripts
  const from = now();
  const cycles = await contend(
    adapter,
    key,
    Array.from({ length: workers }, (_, i) => `w${i}`),
    from + ms,
  );
  return analyse(cycles, from, Math.max(from + ms, ...cycles.map((c) => c.released)));
}

/**
 * Scenario 11: `count` never-seen names, acquired and released one after the other: Redis
 * CPU per cycle, and the keys they leave behind (all, and those with no TTL, which stay
 * forever), per 10 000 names.
 */
export async function freshNames(
  adapter: Adapter,
  count: number,
  admin: Redis,
): Promise<{ opsPerSec: number; redisUs: number; keysLeft: number; keysForever: number }> {
  const tag = `fresh:${adapter.name}:${++freshRun}:`;
  for (let i = 0; i < 100; i++) await (await adapter.acquire(`${tag}warm:${i}`)).release();
  await admin.config('RESETSTAT');
  const start = performance.now();
  for (let i = 0; i < count; i++) await (await adapter.acquire(`${tag}${i}`)).release();
  const opsPerSec = (count * 1000) / (performance.now() - start);
  const redisUs = (await serverMicros(admin)) / count;
  let keysLeft = 0;
  let keysForever = 0;
  for await (const batch of admin.scanStream({ match: `*${tag}*`, count: 1000 })) {
    for (const key of batch as string[]) {
      if (key.includes(`${tag}warm:`)) continue;
      keysLeft++;
      if ((await admin.pttl(key)) < 0) keysForever++;
    }
  }
  const per = 10_000 / count;
  return { opsPerSec, redisUs, keysLeft: keysLeft * per, keysForever: keysForever * per };
}
