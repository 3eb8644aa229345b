import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { startedForFile } from './for-file';
import { defaultServer, RedisProcess } from './redis-process';
import { adminOptions } from './tls';

/**
 * Which server a test runs against: Redis (always), Valkey 8 where it is installed, or
 * Valkey 9 where tools/valkey9.sh built it.
 */
export type ServerKind = 'redis' | 'valkey' | 'valkey9';

/**
 * The server a plain-Redis test runs on, as its titles name it: "Redis 7" for the redis-server
 * installed here, or "Redis 8.6" when a matrix leg put another one in its place
 * (LOCKWARDEN_TEST_SERVER, see defaultServer).
 */
export const redisName: string = ((): string => {
  const [, major, minor] =
    / v=(\d+)\.(\d+)/.exec(spawnSync(defaultServer, ['--version'], { encoding: 'utf8' }).stdout ?? '') ?? [];
  if (!major) return 'Redis';
  return process.env.LOCKWARDEN_TEST_SERVER ? `Redis ${major}.${minor}` : `Redis ${major}`;
})();

/**
 * Whether a matrix leg runs spec files again on another server (LOCKWARDEN_TEST_SERVER): their
 * plain-Redis rows are what it is for, so their Valkey and Valkey 9 rows, which npm test has
 * run already, are skipped there.
 */
const rerun = Boolean(process.env.LOCKWARDEN_TEST_SERVER);

/** Whether `valkey-server` is installed here: the Valkey tests run only then (npm test says so). */
export const hasValkey: boolean = !rerun && spawnSync('valkey-server', ['--version']).status === 0;

/** `describe` where Valkey is installed, `describe.skip` where it is not. */
export const describeOnValkey: typeof describe = hasValkey ? describe : describe.skip;

/**
 * The Valkey 9 server tools/valkey9.sh built, if it did (npm test finds it and passes its path
 * as VALKEY9_SERVER): its tests run only then, and npm test says so.
 */
export const valkey9: string | undefined = (!rerun && process.env.VALKEY9_SERVER) || undefined;

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
  // A matrix leg's server is the one it names, never an outside REDIS_URL.
  if (external && !options.own && server === 'redis' && !rerun) {
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
    client: () => new Redis(proc.url, adminOptions()),
    stop: () => proc.destroy(),
  };
}

/** A Redis of a spec file's own: see redisForFile. */
export interface FileRedis {
  readonly redis: RedisTarget;
  readonly admin: Redis;
  /**
   * Closes what a hook opened on this server (an app, an engine, a client) once the file's
   * tests are over, last registered first, before the server stops: closed after it, they
   * would wait on a server that is gone.
   */
  atEnd(...close: (() => unknown)[]): void;
}

/**
 * A Redis of this spec file's own (startRedis, with its options), started before its tests
 * and stopped after them, with an admin client beside it: the one way a spec gets a server.
 * Read the fields inside hooks and tests, once the server is up.
 */
export function redisForFile(options: { own?: boolean; server?: ServerKind } = {}): FileRedis {
  const file = startedForFile(
    'Redis',
    async () => {
      const redis = await startRedis(options);
      return { redis, admin: redis.client() };
    },
    async ({ redis, admin }) => {
      admin.disconnect();
      await redis.stop();
    },
  );
  return {
    get redis() {
      return file.value().redis;
    },
    get admin() {
      return file.value().admin;
    },
    atEnd: file.atEnd,
  };
}

let counter = 0;

/** A key prefix unique to this test run, so tests sharing one Redis never see each other's keys. */
export function uniquePrefix(name = 't'): string {
  counter++;
  return `lwtest:${name}:${process.pid}:${Date.now().toString(36)}:${counter}:`;
}
