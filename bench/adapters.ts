import { Redis } from 'ioredis';
import { Redlock as SesameRedlock } from '@sesamecare-oss/redlock';
import Redlock from 'redlock';
import { Mutex } from 'redis-semaphore';
import { createClient } from 'redis';
import { GlideClient } from '@valkey/valkey-glide';
import { LockEngine } from '../libs/lockwarden/src/core';

/** A held lock, whichever library took it. */
export interface Held {
  release(): Promise<unknown>;
}

/**
 * One library behind the smallest common interface: wait for a lock (retrying
 * the library's own failures until it gets it, as an application would) and
 * release it. Each adapter has its own Redis connection.
 */
export interface Adapter {
  readonly name: string;
  readonly peer: boolean;
  acquire(key: string): Promise<Held>;
  close(): Promise<void>;
}

const TTL = 10_000;

export function lockwarden(
  url: string,
  options: { fair?: boolean; readToken?: boolean; fenced?: boolean; nodeRedis?: boolean } = {},
): Adapter & { engine: LockEngine } {
  // Through node-redis: a client the application made, given as `client` (commands queue until it is connected).
  const client = options.nodeRedis ? createClient({ url }) : undefined;
  if (client) {
    client.on('error', () => undefined);
    void client.connect();
  }
  const engine = new LockEngine({ ...(client ? { client } : { redis: url }), keyPrefix: 'bench:lw:', waitMs: 60_000 });
  const fair = options.fair === true;
  // The peers' terms: a fixed 10 s lease, no renewal.
  const fenced = options.fenced === true;
  const acquireOptions = fair ? { fair, leaseMs: TTL, renew: false } : { leaseMs: TTL, renew: false, fenced };
  const name = options.nodeRedis
    ? 'lockwarden node-redis'
    : fair
      ? 'lockwarden fair'
      : options.readToken
        ? fenced
          ? 'lockwarden fenced'
          : 'lockwarden token'
        : 'lockwarden';
  return {
    name,
    peer: false,
    engine,
    // A caller that hands its fencing token to a resource reads it once per hold.
    acquire: options.readToken
      ? async (key) => {
          const lock = await engine.acquire(key, acquireOptions);
          await lock.fencingToken();
          return lock;
        }
      : (key) => engine.acquire(key, acquireOptions),
    close: async () => {
      await engine.close();
      await client?.close();
    },
  };
}

/**
 * Lockwarden through a Valkey GLIDE client the caller made (GLIDE connects asynchronously, so
 * the engine is made on the first acquire), on the peers' terms as above.
 */
export function lockwardenGlide(url: string): Adapter {
  const { hostname, port } = new URL(url);
  let glide: GlideClient | undefined;
  let ready: Promise<LockEngine> | undefined;
  const engine = (): Promise<LockEngine> =>
    (ready ??= GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port) }] }).then((client) => {
      glide = client;
      return new LockEngine({ client, keyPrefix: 'bench:lw:', waitMs: 60_000 });
    }));
  return {
    name: 'lockwarden glide',
    peer: false,
    acquire: async (key) => (await engine()).acquire(key, { leaseMs: TTL, renew: false }),
    close: async () => {
      if (ready) await (await ready).close();
      glide?.close();
    },
  };
}

type RedlockLike = { acquire(keys: string[], ttl: number): Promise<{ release(): Promise<unknown> }> };

function redlockAdapter(name: string, url: string, make: (client: Redis) => RedlockLike): Adapter {
  const client = new Redis(url);
  const redlock = make(client);
  return {
    name,
    peer: true,
    async acquire(key) {
      // redlock gives up after retryCount attempts ("quorum" errors under contention): try again.
      for (;;) {
        try {
          return await redlock.acquire([`bench:rl:${key}`], TTL);
        } catch {
          continue;
        }
      }
    },
    close: async () => void (await client.quit()),
  };
}

export function redlock(url: string, tuned = false): Adapter {
  return redlockAdapter(tuned ? 'redlock tuned' : 'redlock', url, (client) =>
    tuned ? new Redlock([client], { retryCount: -1, retryDelay: 5, retryJitter: 5 }) : new Redlock([client]),
  );
}

export function sesame(url: string, tuned = false): Adapter {
  return redlockAdapter(tuned ? 'sesame tuned' : 'sesame', url, (client) =>
    tuned
      ? (new SesameRedlock([client], { retryCount: -1, retryDelay: 5, retryJitter: 5 }) as unknown as RedlockLike)
      : (new SesameRedlock([client]) as unknown as RedlockLike),
  );
}

export function semaphore(url: string, tuned = false): Adapter {
  const client = new Redis(url);
  const options = tuned
    ? { lockTimeout: TTL, acquireTimeout: 60_000, retryInterval: 2 }
    : { lockTimeout: TTL, acquireTimeout: 60_000 };
  return {
    name: tuned ? 'semaphore tuned' : 'semaphore',
    peer: true,
    async acquire(key) {
      const mutex = new Mutex(client, `bench:rs:${key}`, options);
      await mutex.acquire();
      return mutex;
    },
    close: async () => void (await client.quit()),
  };
}

/** Every library with its defaults, and the polling ones also with a short, tuned retry. */
export const LIBRARIES: Record<string, (url: string) => Adapter> = {
  lockwarden: (url) => lockwarden(url),
  redlock: (url) => redlock(url),
  'redlock tuned': (url) => redlock(url, true),
  sesame: (url) => sesame(url),
  'sesame tuned': (url) => sesame(url, true),
  semaphore: (url) => semaphore(url),
  'semaphore tuned': (url) => semaphore(url, true),
  'lockwarden fair': (url) => lockwarden(url, { fair: true }),
  'lockwarden token': (url) => lockwarden(url, { readToken: true }),
  'lockwarden fenced': (url) => lockwarden(url, { readToken: true, fenced: true }),
  'lockwarden node-redis': (url) => lockwarden(url, { nodeRedis: true }),
  'lockwarden glide': (url) => lockwardenGlide(url),
};

export function makeAdapter(name: string, url: string): Adapter {
  const make = LIBRARIES[name];
  if (!make) throw new Error(`unknown library "${name}"; known: ${Object.keys(LIBRARIES).join(', ')}`);
  return make(url);
}
