import { Redis } from 'ioredis';
import { Semaphore as PeerSemaphore } from 'redis-semaphore';
import { LockEngine } from '../libs/lockwarden/src/core/engine/lock-engine';

const TTL = 10_000;

/** A permit taken and given back, whichever library took it. */
type TakePermit = () => Promise<{ release(): Promise<unknown> }>;

/** `workers` flows loop acquire+release of one permit of a `permits`-permit semaphore: cycles per second. */
async function cycles(take: TakePermit, workers: number, ms: number): Promise<number> {
  let count = 0;
  const loop = async (until: number): Promise<void> => {
    while (performance.now() < until) {
      await (await take()).release();
      count++;
    }
  };
  await Promise.all(Array.from({ length: workers }, () => loop(performance.now() + Math.min(200, ms / 4))));
  count = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: workers }, () => loop(start + ms)));
  return (count * 1000) / (performance.now() - start);
}

/** Scenario 10 for Lockwarden: a fixed 10 s lease per permit, as the peer's lockTimeout. */
export async function lockwardenPermits(url: string, workers: number, permits: number, ms: number): Promise<number> {
  const engine = new LockEngine({ redis: url, keyPrefix: 'bench:sem:', waitMs: 60_000 });
  try {
    const semaphore = engine.semaphore(`permits-${Date.now()}`, { permits });
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
): Promise<number> {
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
