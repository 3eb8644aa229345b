import { Redis } from 'ioredis';
import { LockEngine } from 'lockwarden';
import { WriteCoalescer } from '../libs/lockwarden/src/core/redis/write-coalescer';
import { startRedis, uniquePrefix } from './harness/redis';
import type { RedisTarget } from './harness/redis';

/**
 * Commands that concurrent flows issue in one tick leave in one socket write; a lone command
 * leaves at once. Checked on a real ioredis connection by watching its socket.
 */
let redis: RedisTarget;

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis.stop();
});

type SocketWrite = (...args: unknown[]) => unknown;
type SocketWritev = (batch: unknown[], ...rest: unknown[]) => unknown;

/** Counts the system-call-level writes of a connected client's socket. */
function watchWrites(client: Redis): { writes: () => number; chunks: () => number } {
  const stream = (client as unknown as { stream: { _write: SocketWrite; _writev: SocketWritev } }).stream;
  let writes = 0;
  let chunks = 0;
  const single = stream._write.bind(stream);
  const vector = stream._writev.bind(stream);
  stream._write = (...args: unknown[]) => {
    writes++;
    chunks++;
    return single(...args);
  };
  stream._writev = (batch: unknown[], ...rest: unknown[]) => {
    writes++;
    chunks += batch.length;
    return vector(batch, ...rest);
  };
  return { writes: () => writes, chunks: () => chunks };
}

describe('WriteCoalescer', () => {
  it('writes the first command of a tick at once, and the rest of the tick together', async () => {
    const client = redis.client();
    try {
      await client.ping();
      const coalescer = new WriteCoalescer(client);
      const socket = watchWrites(client);
      const replies = Array.from({ length: 10 }, (_, i) => {
        coalescer.cork();
        return client.echo(`m${i}`);
      });
      // The first went out before the tick ended; the other nine wait for it.
      expect(socket.writes()).toBe(1);
      expect(await Promise.all(replies)).toEqual(Array.from({ length: 10 }, (_, i) => `m${i}`));
      expect(socket.writes()).toBe(2);
      expect(socket.chunks()).toBe(10);
    } finally {
      client.disconnect();
    }
  });

  it('sends a long burst in batches of 32, so Redis starts on it while the tick goes on', async () => {
    const client = redis.client();
    try {
      await client.ping();
      const coalescer = new WriteCoalescer(client);
      const socket = watchWrites(client);
      const replies = Array.from({ length: 1 + 32 * 3 }, (_, i) => {
        coalescer.cork();
        return client.echo(`m${i}`);
      });
      expect(socket.writes()).toBe(3); // the first alone, then two full batches; the third waits
      await Promise.all(replies);
      expect(socket.writes()).toBe(4);
      expect(socket.chunks()).toBe(97);
    } finally {
      client.disconnect();
    }
  });

  it('leaves a client that is not connected yet to ioredis (its offline queue)', async () => {
    const client = new Redis(redis.url, { lazyConnect: true });
    try {
      const coalescer = new WriteCoalescer(client);
      coalescer.cork();
      coalescer.cork(); // would cork: there is no socket yet, so nothing happens
      expect(await client.echo('later')).toBe('later');
    } finally {
      client.disconnect();
    }
  });

  it('lets 64 concurrent flows of an engine share writes, and contended flows still exclude each other', async () => {
    const engine = new LockEngine({ redis: redis.url, keyPrefix: uniquePrefix('coalesce') });
    try {
      await engine.withLock('warm', () => undefined);
      const socket = watchWrites(engine.client as Redis);
      // 64 flows on keys of their own: the bench's uncontended scenario.
      await Promise.all(
        Array.from({ length: 64 }, async (_, flow) => {
          for (let i = 0; i < 20; i++) await engine.withLock(`own:${flow}`, () => undefined);
        }),
      );
      // Each grant is its own SET; the releases of one turn of the event loop go as one script
      // per batch (turn-batch.ts): fewer commands than lock operations (an acquire and a
      // release each). And far fewer socket writes than commands: the flows' commands of one
      // turn went out in shared writes.
      const operations = 64 * 20 * 2;
      console.log(
        `64 flows: ${operations} lock operations, ${socket.chunks()} commands, ${socket.writes()} socket writes`,
      );
      expect(socket.chunks()).toBeLessThan(operations * 0.75);
      expect(socket.writes()).toBeLessThan(socket.chunks() / 4);
      let entered = 0;
      const holders = new Map<string, number>();
      const overlaps: string[] = [];
      await Promise.all(
        Array.from({ length: 64 }, async (_, flow) => {
          const key = `flow:${flow % 8}`; // eight flows per key: they contend, and wait by pub/sub
          for (let i = 0; i < 20; i++) {
            await engine.withLock(key, async () => {
              holders.set(key, (holders.get(key) ?? 0) + 1);
              if (holders.get(key) !== 1) overlaps.push(key);
              await new Promise((done) => setImmediate(done));
              holders.set(key, holders.get(key)! - 1);
              entered++;
            });
          }
        }),
      );
      expect(overlaps).toEqual([]);
      expect(entered).toBe(64 * 20);
    } finally {
      await engine.close();
    }
  });
});
