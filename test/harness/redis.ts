import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { RedisProcess } from './redis-process';

/** Which server a test runs against: Redis (always), or Valkey where it is installed. */
export type ServerKind = 'redis' | 'valkey';

/** Whether `valkey-server` is installed here: the Valkey tests run only then (npm test says so). */
export const hasValkey: boolean = spawnSync('valkey-server', ['--version']).status === 0;

/** `describe` where Valkey is installed, `describe.skip` where it is not. */
export const describeOnValkey: typeof describe = hasValkey ? describe : describe.skip;

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
  const valkey = options.server === 'valkey';
  if (external && !options.own && !valkey) {
    return {
      url: external,
      external: true,
      process: undefined,
      client: () => new Redis(external),
      stop: async () => undefined,
    };
  }
  const proc = await RedisProcess.start(valkey ? { binary: 'valkey-server' } : {});
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
export function uniquePrefix(name = 't'): string {
  counter++;
  return `lwtest:${name}:${process.pid}:${Date.now().toString(36)}:${counter}:`;
}
