import { Redis } from 'ioredis';
import { Semaphore as PeerSemaphore } from 'redis-semaphore';
import { LockEngine } from '../libs/lockwarden/src/core';
import { percentile } from './stats';
import { serverWork } from './server-work';
import { runWorkerProcesses } from './worker-processes';

const TTL = 10_000;

/** A permit taken and given back, whichever library took it. */
type TakePermit = () => Promise<{ release(): Promise<unknown> }>;

/** Scenario 10's figures: cycles per second, and how evenly the waiting went. */
export interface PermitsResult {
  readonly opsPerSec: number;
  /** p99 of the time from asking for a permit to holding it, ms. */
  readonly waitP99: number;
  /** The fewest cycles any worker made over the most: 1 is even, 0 is a worker starved. */
  readonly fairness: number;
  /** Across processes: the client CPU (all processes) per cycle, µs. */
  readonly clientCpuUs?: number;
  /** Across processes: Redis' own CPU per grant (INFO cpu), µs. */
  readonly redisCpuUs?: number;
  /** Across processes: commands Redis ran per grant, a script's inner calls included. */
  readonly commands?: number;
}

/** `workers` flows loop acquire+release of one permit of a `permits`-permit semaphore. */
async function cycles(take: TakePermit, workers: number, ms: number): Promise<PermitsResult> {
  let waits: number[] = [];
  let counts: number[] = [];
  const loop = async (worker: number, until: number): Promise<void> => {
    while (performance.now() < until) {
      const asked = performance.now();
      const permit = await take();
      waits.push(performance.now() - asked);
      await permit.release();
      counts[worker]++;
    }
  };
  const run = async (until: number): Promise<void> => {
    waits = [];
    counts = Array.from({ length: workers }, () => 0);
    await Promise.all(Array.from({ length: workers }, (_, w) => loop(w, until)));
  };
  await run(performance.now() + Math.min(200, ms / 4));
  const start = performance.now();
  await run(start + ms);
  const total = counts.reduce((a, b) => a + b, 0);
  return {
    opsPerSec: (total * 1000) / (performance.now() - start),
    waitP99: percentile(waits, 99),
    fairness: Math.min(...counts) / Math.max(...counts),
  };
}

/** A permit-taking function for one library, and how to close what it opened. */
/** The permit libraries measured across processes. */
export type PermitLib = 'lockwarden' | 'semaphore' | 'semaphore tuned';

export function permitTaker(
  lib: PermitLib,
  url: string,
  key: string,
  permits: number,
): { take: TakePermit; close: () => Promise<unknown> } {
  if (lib === 'lockwarden') {
    const engine = new LockEngine({ redis: url, keyPrefix: 'bench:sem:', waitMs: 60_000 });
    const semaphore = engine.semaphore(key, { limit: permits });
    return { take: () => semaphore.acquire({ leaseMs: TTL }), close: () => engine.close() };
  }
  const client = new Redis(url);
  const options =
    lib === 'semaphore tuned'
      ? { lockTimeout: TTL, acquireTimeout: 60_000, retryInterval: 2 }
      : { lockTimeout: TTL, acquireTimeout: 60_000 };
  return {
    take: async () => {
      const semaphore = new PeerSemaphore(client, `bench:rs-sem:${key}`, permits, options);
      await semaphore.acquire();
      return semaphore;
    },
    close: () => client.quit(),
  };
}

/** Scenario 10 for Lockwarden: a fixed 10 s lease per permit, as the peer's lockTimeout. */
export async function lockwardenPermits(
  url: string,
  workers: number,
  permits: number,
  ms: number,
): Promise<PermitsResult> {
  const engine = new LockEngine({ redis: url, keyPrefix: 'bench:sem:', waitMs: 60_000 });
  try {
    const semaphore = engine.semaphore(`permits-${Date.now()}`, { limit: permits });
    return await cycles(() => semaphore.acquire({ leaseMs: TTL }), workers, ms);
  } finally {
    await engine.close();
  }
}

/** Scenario 10 for redis-semaphore's Semaphore, with its defaults or a short, tuned retry. */
export async function peerPermits(
  url: string,
  workers: number,
  permits: number,
  ms: number,
  tuned: boolean,
): Promise<PermitsResult> {
  const client = new Redis(url);
  const key = `bench:rs-sem:${Date.now()}:${tuned}`;
  const options = tuned
    ? { lockTimeout: TTL, acquireTimeout: 60_000, retryInterval: 2 }
    : { lockTimeout: TTL, acquireTimeout: 60_000 };
  try {
    return await cycles(
      async () => {
        const semaphore = new PeerSemaphore(client, key, permits, options);
        await semaphore.acquire();
        return semaphore;
      },
      workers,
      ms,
    );
  } finally {
    await client.quit();
  }
}

/**
 * Scenario 10 across processes: `processes` processes with `workers` flows each share one
 * semaphore. Fairness is between processes: the fewest cycles a process made over the most.
 * Redis' CPU and commands are read around the timed run only, through `admin`.
 */
export async function multiProcessPermits(
  url: string,
  admin: Redis,
  lib: PermitLib,
  ms: number,
  processes = 4,
  holdMs = 0,
  thinkMs = 0,
): Promise<PermitsResult> {
  const key = `mp-${lib.replace(' ', '-')}-${Date.now()}`;
  const work = serverWork(admin);
  const results = await runWorkerProcesses<{ count: number; waits: number[]; cpuMs: number }>(
    url,
    'permits-worker.ts',
    key,
    processes,
    { LIB: lib, MS: String(ms), HOLD_MS: String(holdMs), THINK_MS: String(thinkMs) },
    async () => {
      await work.start();
      return Date.now() + 50;
    },
  );
  const counts = results.map((r) => r.count);
  const cycles = counts.reduce((a, b) => a + b, 0);
  const server = await work.per(cycles);
  return {
    clientCpuUs: (results.reduce((a, r) => a + r.cpuMs, 0) * 1000) / cycles,
    redisCpuUs: server.cpuUs,
    commands: server.commands,
    opsPerSec: (cycles * 1000) / ms,
    waitP99: percentile(
      results.flatMap((r) => r.waits),
      99,
    ),
    fairness: Math.min(...counts) / Math.max(...counts),
  };
}
