// Scheduled jobs across real processes (test/workers/tick-worker.ts), for the tick specs.
// What ran is read from an observer Redis that only the job's own code writes to, never the
// library: one entry per run, and a count of runs inside at once.
import { Redis } from 'ioredis';
import { ChildScript, runWorker } from './child';
import { startRedis } from './redis';
import type { ServerKind } from './redis';
import type { RedisTarget } from './redis';
import { RedisProcess } from './redis-process';

/** One run of the job, as the job itself recorded it at the observer. */
export interface Run {
  at: number;
  instance: string;
  token: number;
  startedAt: number;
  catchUp: boolean;
}

/**
 * Starts the lock's Redis and the observer for one spec file, kills its instances and
 * clears the observer after each test, and gives the helpers that start instances and read
 * what they did. `server`: the lock's server (the observer is always Redis).
 */
export function tickInstances(server: ServerKind = 'redis') {
  let redis: RedisTarget;
  let observerServer: RedisProcess;
  let observer: Redis;
  let children: ChildScript[] = [];

  beforeAll(async () => {
    [redis, observerServer] = await Promise.all([startRedis({ server }), RedisProcess.start()]);
    observer = new Redis(observerServer.url);
  });

  afterEach(async () => {
    for (const child of children) child.kill('SIGKILL');
    await Promise.all(children.map((c) => c.exited));
    children = [];
    await observer.flushall();
  });

  afterAll(async () => {
    observer.disconnect();
    await Promise.all([redis.stop(), observerServer.destroy()]);
  });

  /** Starts one instance per entry (its env), and resolves once all are ready. */
  async function instances(prefix: string, envs: Record<string, string>[]): Promise<ChildScript[]> {
    const started = envs.map((env, i) =>
      runWorker('tick-worker', {
        REDIS: redis.url,
        OBSERVER: observerServer.url,
        PREFIX: prefix,
        NAME: `i${i + 1}`,
        ...env,
      }),
    );
    children.push(...started);
    await Promise.all(started.map((w) => w.waitFor(/^ready$/)));
    return started;
  }

  /** The observer's clock, in ms: the same machine clock the lock's Redis reads. */
  async function serverNow(): Promise<number> {
    const [s, us] = await observer.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  }

  /** Ticks T0..T0+(n-1)s, from the second after next, so that every instance is up for all. */
  async function window(n: number): Promise<number[]> {
    const first = Math.ceil((await serverNow()) / 1000) * 1000 + 1000;
    return Array.from({ length: n }, (_, i) => first + i * 1000);
  }

  async function runs(): Promise<Run[]> {
    return (await observer.lrange('runs', 0, -1)).map((line) => JSON.parse(line) as Run);
  }

  /**
   * Over the next `ticks` ticks (a window), waits until every instance's timer has fired for the
   * last of them, `graceMs` late at most, and checks that each tick that fired anywhere (at least
   * `atLeast` of them) ran exactly once. The runs, for what a test checks besides.
   */
  async function expectEachTickOnce(
    workers: ChildScript[],
    ticks: number,
    graceMs: number,
    atLeast: number,
  ): Promise<Run[]> {
    const at = await window(ticks);
    await allFired(workers, at[at.length - 1] + graceMs);
    const all = await runs();
    const fired = at.filter((tick) => firedBy(workers, tick));
    expect(fired.length).toBeGreaterThanOrEqual(atLeast);
    for (const tick of fired) expect([tick, all.filter((r) => r.at === tick).length]).toEqual([tick, 1]);
    return all;
  }

  return { instances, window, runs, expectEachTickOnce, observer: () => observer };
}

/**
 * Resolves once every instance's timer has fired for tick `at` or a later one (each by its own
 * clock). Not for `at` exactly: on a loaded machine a timer can fire over a second late, and
 * its line then names a later second, so a line for `at` itself may never come.
 */
export function allFired(workers: ChildScript[], at: number): Promise<unknown> {
  return Promise.all(workers.map((w) => firedFrom(w, at)));
}

async function firedFrom(worker: ChildScript, at: number): Promise<void> {
  const reached = (line: string): boolean => Number(/^fired (\d+) /.exec(line)?.[1] ?? -1) >= at;
  // The lines so far are read and the wait for the next one is registered in the same turn, so
  // no line can come in between unseen.
  while (!worker.lines.some(reached)) await worker.next(/^fired \d+ /);
}

export function firedBy(workers: ChildScript[], at: number): boolean {
  return workers.some((w) => w.lines.some((l) => l.startsWith(`fired ${at} `)));
}

export function eventsOf(workers: ChildScript[], type: string, at: number): number {
  return workers.reduce((n, w) => n + w.lines.filter((l) => l === `event ${type} ${at}`).length, 0);
}
