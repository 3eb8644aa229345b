// Lockwarden's own figures (no peers): uncontended mutex, 16 readers, writer hand-off,
// and @Locked overhead over withLock. Run: npm run bench:figures
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockEngine, LockModule, LockService, Locked } from '../libs/lockwarden/src';
import { RedisProcess } from '../test/harness/redis-process';
import { concurrent, median, percentile, timed } from './stats';

const ROUND_MS = Number(process.env.ROUND_MS ?? 1_500);
const ROUNDS = Number(process.env.ROUNDS ?? 3);

@Injectable()
class Empty {
  constructor(readonly locks: LockService) {}

  @Locked('deco')
  async decorated(): Promise<void> {}

  direct(): Promise<void> {
    return this.locks.withLock('deco', async () => undefined);
  }
}

async function main(): Promise<void> {
  const server = process.env.REDIS_URL ? undefined : await RedisProcess.start();
  const url = process.env.REDIS_URL ?? server!.url;
  const engine = new LockEngine({ redis: url, keyPrefix: `bench:${process.pid}:` });
  @Module({
    imports: [LockModule.forRoot({ redis: url, keyPrefix: `bench:${process.pid}:deco:` })],
    providers: [Empty],
  })
  class BenchModule {}
  const app = await NestFactory.createApplicationContext(BenchModule, { logger: false });
  const empty = app.get(Empty);

  const mutex: number[] = [];
  const readers: number[] = [];
  const handoff: number[] = [];
  const deco: number[] = [];
  const direct: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    process.stderr.write(`round ${round + 1}/${ROUNDS}\r`);
    mutex.push((await timed(ROUND_MS, async () => (await engine.acquire('m')).release())).opsPerSec);
    readers.push(await concurrent(ROUND_MS, 16, async () => (await engine.acquireRead('r')).release()));
    for (let i = 0; i < 30; i++) handoff.push(await writerHandoff(engine));
    // Interleave the two so machine noise hits both alike.
    direct.push((await timed(ROUND_MS / 2, () => empty.direct())).opsPerSec);
    deco.push((await timed(ROUND_MS / 2, () => empty.decorated())).opsPerSec);
  }
  const m = median(mutex);
  const r = median(readers);
  console.log(`uncontended mutex acquire+release: ${m.toFixed(0)} ops/s`);
  console.log(`16 readers, read acquire+release:  ${r.toFixed(0)} ops/s (${(r / m).toFixed(2)}x the mutex)`);
  console.log(
    `writer hand-off after the last reader: p50 ${median(handoff).toFixed(2)} ms, p99 ${percentile(handoff, 99).toFixed(2)} ms`,
  );
  const overhead = median(direct) / median(deco) - 1;
  console.log(
    `withLock around an empty method: ${median(direct).toFixed(0)} ops/s; @Locked: ${median(deco).toFixed(0)} ops/s (overhead ${(overhead * 100).toFixed(1)}%)`,
  );
  await app.close();
  await engine.close();
  await server?.destroy();
}

/** Four readers hold; a writer waits; the time from the last reader's release to the writer's grant. */
async function writerHandoff(engine: LockEngine): Promise<number> {
  const held = await Promise.all([1, 2, 3, 4].map(() => engine.acquireRead('h')));
  let parked!: () => void;
  const waiting = new Promise<void>((r) => (parked = r));
  const writer = engine.acquireWrite('h', { waitMs: 10_000 });
  // The writer has queued once its first attempt came back busy: one PING on the same connection later.
  await engine.client.ping();
  parked();
  await waiting;
  for (const h of held.slice(0, 3)) await h.release();
  const t0 = performance.now();
  await held[3].release();
  const w = await writer;
  const elapsed = performance.now() - t0;
  await w.release();
  return elapsed;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
