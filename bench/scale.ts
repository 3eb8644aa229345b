import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import { LockEngine, Locked, LockModule, LockService } from '../libs/lockwarden/src';
import { median, percentile } from './stats';

export interface ScaleResult {
  /** Round trips (script calls) spent renewing every held lock once. */
  readonly callsPerRound: number;
  /** Process CPU while only renewing, in % of one core. */
  readonly cpuPercent: number;
  /** INFO calls a second (the eviction check's, on a server that may evict). */
  readonly infoPerSec: number;
}

/**
 * Script calls Redis has served: every renewal, ours and redis-semaphore's, is
 * one. (Commands that scripts run count in commandstats too, so they are left out.)
 */
async function commandCalls(url: string): Promise<{ scripts: number; info: number }> {
  const c = new Redis(url);
  try {
    const info = await c.info('commandstats');
    let scripts = 0;
    for (const m of info.matchAll(/cmdstat_(evalsha|eval):calls=(\d+)/g)) scripts += Number(m[2]);
    // The bench's own INFO commandstats calls (one before, one after a window) are left out below.
    return { scripts, info: Number(/cmdstat_info:calls=(\d+)/.exec(info)?.[1] ?? 0) };
  } finally {
    c.disconnect();
  }
}

async function window<T>(
  url: string,
  ms: number,
  during: () => T,
): Promise<{ calls: number; info: number; cpu: number; value: T }> {
  const calls0 = await commandCalls(url);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, ms));
  const value = during();
  const cpu = process.cpuUsage(cpu0);
  const wall = performance.now() - t0;
  const calls1 = await commandCalls(url);
  return {
    calls: calls1.scripts - calls0.scripts,
    info: ((calls1.info - calls0.info - 1) * 1000) / wall,
    cpu: ((cpu.user + cpu.system) / 1000 / wall) * 100,
    value,
  };
}

/** Scenario 7, Lockwarden: `count` locks held, the watchdog renewing each every second. */
export async function lockwardenScale(url: string, count: number, ms: number): Promise<ScaleResult> {
  const engine = new LockEngine({ redis: url, keyPrefix: 'bench:scale:', leaseMs: 3_000 });
  try {
    for (let i = 0; i < count; i += 500) {
      await Promise.all(Array.from({ length: Math.min(500, count - i) }, (_, j) => engine.acquire(`k${i + j}`)));
    }
    // Measure steady renewing, not the acquisitions' garbage: start after one full round.
    while (engine.watchdog.renewals < count) await new Promise((r) => setTimeout(r, 50));
    const start = engine.watchdog.renewals;
    const w = await window(url, ms, () => engine.watchdog.renewals - start);
    return { callsPerRound: w.calls / (w.value / count), cpuPercent: w.cpu, infoPerSec: w.info };
  } finally {
    await engine.close();
  }
}

/** Scenario 7, redis-semaphore: the same locks, each refreshed by its own timer every second. */
export async function semaphoreScale(url: string, count: number, ms: number): Promise<ScaleResult> {
  const client = new Redis(url);
  const mutexes: Mutex[] = [];
  try {
    for (let i = 0; i < count; i += 500) {
      const batch = Array.from(
        { length: Math.min(500, count - i) },
        (_, j) => new Mutex(client, `bench:scale-rs:k${i + j}`, { lockTimeout: 3_000, refreshInterval: 1_000 }),
      );
      await Promise.all(batch.map((m) => m.acquire()));
      mutexes.push(...batch);
    }
    await new Promise((r) => setTimeout(r, 1_100)); // one refresh of every lock first, as for Lockwarden
    const w = await window(url, ms, () => ms / 1_000);
    return { callsPerRound: w.calls / w.value, cpuPercent: w.cpu, infoPerSec: w.info };
  } finally {
    await Promise.all(mutexes.map((m) => m.release()));
    await client.quit();
  }
}

/** Scenario 6: 16 readers on one key, and a writer's hand-off after the last reader leaves. */
export async function readWrite(
  url: string,
  ms: number,
): Promise<{ readsPerSec: number; handoffP50: number; handoffP99: number }> {
  const engine = new LockEngine({ redis: url, keyPrefix: `bench:rw:${Date.now()}:` });
  try {
    let count = 0;
    const until = performance.now() + ms;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (performance.now() < until) {
          await (await engine.acquireRead('doc')).release();
          count++;
        }
      }),
    );
    const readsPerSec = (count * 1000) / ms;
    const handoffs: number[] = [];
    for (let i = 0; i < 30; i++) {
      const readers = await Promise.all([1, 2, 3, 4].map(() => engine.acquireRead('h')));
      const writer = engine.acquireWrite('h', { waitMs: 10_000 });
      await (engine.client as Redis).ping(); // the writer's first attempt has queued it by now
      for (const r of readers.slice(0, 3)) await r.release();
      const t0 = performance.now();
      await readers[3].release();
      const w = await writer;
      handoffs.push(performance.now() - t0);
      await w.release();
    }
    return { readsPerSec, handoffP50: median(handoffs), handoffP99: percentile(handoffs, 99) };
  } finally {
    await engine.close();
  }
}

@Injectable()
class Empty {
  constructor(readonly locks: LockService) {}

  @Locked('deco')
  async decorated(): Promise<void> {}

  direct(): Promise<void> {
    return this.locks.withLock('deco', async () => undefined);
  }
}

/** Scenario 8: calls per second of an empty method, via withLock and via @Locked, interleaved. */
export async function decoratorOverhead(
  url: string,
  ms: number,
  rounds: number,
): Promise<{ direct: number; decorated: number }> {
  @Module({ imports: [LockModule.forRoot({ redis: url, keyPrefix: `bench:deco:${Date.now()}:` })], providers: [Empty] })
  class BenchModule {}
  const app = await NestFactory.createApplicationContext(BenchModule, { logger: false });
  const empty = app.get(Empty);
  const direct: number[] = [];
  const decorated: number[] = [];
  const rate = async (op: () => Promise<void>): Promise<number> => {
    let n = 0;
    const start = performance.now();
    while (performance.now() - start < ms) {
      await op();
      n++;
    }
    return (n * 1000) / (performance.now() - start);
  };
  try {
    await rate(() => empty.direct());
    for (let r = 0; r < rounds; r++) {
      direct.push(await rate(() => empty.direct()));
      decorated.push(await rate(() => empty.decorated()));
    }
    return { direct: median(direct), decorated: median(decorated) };
  } finally {
    await app.close();
  }
}
