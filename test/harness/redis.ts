import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { RedisProcess } from './redis-process';

/**
 * Which server a test runs against: Redis (always), Valkey 8 where it is installed, or
 * Valkey 9 where tools/valkey9.sh built it.
 */
export type ServerKind = 'redis' | 'valkey' | 'valkey9';

/** Whether `valkey-server` is installed here: the Valkey tests run only then (npm test says so). */
export const hasValkey: boolean = spawnSync('valkey-server', ['--version']).status === 0;

/** `describe` where Valkey is installed, `describe.skip` where it is not. */
export const describeOnValkey: typeof describe = hasValkey ? describe : describe.skip;

/**
 * The Valkey 9 server tools/valkey9.sh built, if it did (npm test finds it and passes its path
 * as VALKEY9_SERVER): its tests run only then, and npm test says so.
 */
export const valkey9: string | undefined = process.env.VALKEY9_SERVER || undefined;

/** `describe` where Valkey 9 was built, `describe.skip` where it was not. */
export const describeOnValkey9: typeof describe = valkey9 ? describe : describe.skip;

/** A Redis to test against: one this harness started, or the one REDIS_URL names. */
export interface RedisTarget {
  readonly url: string;
  /** True when REDIS_URL points at a server we did not start: never kill or flush it. */
  readonly external: boolean;
  /** The process, when we started it (for fault tests). */
  readonly process: RedisProcess | undefined;
  /** A new client of this server; the caller closes it. */
  client(): Redis;
  stop(): Promise<void>;
}

/**
 * Starts a throwaway single Redis for a test file, or uses REDIS_URL when it
 * is set. Tests that kill or restart Redis ask for `{ own: true }`, which
 * always starts a private server.
 */
export async function startRedis(options: { own?: boolean; server?: ServerKind } = {}): Promise<RedisTarget> {
  const external = process.env.REDIS_URL;
  const server = options.server ?? 'redis';
  if (external && !options.own && server === 'redis') {
    return {
      url: external,
      external: true,
      process: undefined,
      client: () => new Redis(external),
      stop: async () => undefined,
    };
  }
  const binary = server === 'valkey' ? 'valkey-server' : server === 'valkey9' ? valkey9 : undefined;
  if (server === 'valkey9' && !binary) throw new Error('Valkey 9 is not built here: run tools/valkey9.sh');
  const proc = await RedisProcess.start(binary ? { binary } : {});
  return {
    url: proc.url,
    external: false,
    process: proc,
    client: () => new Redis(proc.url),
    stop: () => proc.destroy(),
  };
}

let counter = 0;

/** A key prefix unique to this test run, so tests sharing one Redis never see each other's keys. */
/**
 * A Redis of this spec file's own (startRedis), started before its tests and stopped after
 * them, with an admin client beside it: the one way a spec gets a server it only reads and
 * writes. Read the fields inside hooks and tests, once the server is up.
 */
export function redisForFile(): { readonly redis: RedisTarget; readonly admin: Redis } {
  let redis: RedisTarget | undefined;
  let admin: Redis | undefined;
  beforeAll(async () => {
    redis = await startRedis();
    admin = redis.client();
  });
  afterAll(async () => {
    await admin?.quit();
    await redis?.stop();
  });
  const up = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("the file's Redis is not started yet: read it inside a hook or a test");
    return value;
  };
  return {
    get redis() {
      return up(redis);
    },
    get admin() {
      return up(admin);
    },
  };
}

export function uniquePrefix(name = 't'): string {
  counter++;
  return `lwtest:${name}:${process.pid}:${Date.now().toString(36)}:${counter}:`;
}
