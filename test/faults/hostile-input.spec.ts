import { Injectable } from '@nestjs/common';
import type { INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  LockConfigError,
  LockEngine,
  LockModule,
  LockService,
  Locked,
  ReadLocked,
  ScheduledLock,
  WriteLocked,
} from 'lockwarden';
import type { LockMethodDecorator } from 'lockwarden';
import { redisForFile, uniquePrefix } from '../harness/redis';

/**
 * Hostile keys, end to end against a real Redis: every public way in (LockEngine,
 * LockService, the decorators) rejects them with a LockConfigError of a sane size, runs no
 * protected code, and sends Redis not one command. The server is this file's own, so its
 * command counters see nothing but this file's traffic.
 */
const server = redisForFile({ own: true });
let engine: LockEngine;
let ctx: INestApplicationContext;
let service: LockService;
let jobs: Jobs;

const HOSTILE_KEYS: [string, unknown][] = [
  ['a null-prototype object', Object.create(null)],
  [
    'an object whose toString throws',
    {
      toString(): string {
        throw new Error('toString must never be called');
      },
    },
  ],
  ['a 1 MiB string', 'k'.repeat(2 ** 20)],
  // 'a\uD800' and 'a\uDC00' differ in JavaScript, but both reach Redis as "a\xEF\xBF\xBD".
  ['a lone high surrogate', 'a\uD800'],
  ['a lone low surrogate', 'a\uDC00'],
];

/** The lock methods LockEngine and LockService share. */
type LockApi = Pick<
  LockService,
  | 'acquire'
  | 'tryAcquire'
  | 'withLock'
  | 'acquireRead'
  | 'acquireWrite'
  | 'withReadLock'
  | 'withWriteLock'
  | 'inspect'
  | 'forceUnlock'
>;

// waitMs 0: should a key get through after all, the test fails at once instead of waiting on it.
const NOW = { waitMs: 0 };
const CALLS: Record<keyof LockApi, (api: LockApi, key: string, work: () => void) => Promise<unknown>> = {
  acquire: (api, key) => api.acquire(key, NOW),
  tryAcquire: (api, key) => api.tryAcquire(key, NOW),
  withLock: (api, key, work) => api.withLock(key, work, NOW),
  acquireRead: (api, key) => api.acquireRead(key, NOW),
  acquireWrite: (api, key) => api.acquireWrite(key, NOW),
  withReadLock: (api, key, work) => api.withReadLock(key, work, NOW),
  withWriteLock: (api, key, work) => api.withWriteLock(key, work, NOW),
  inspect: (api, key) => api.inspect(key),
  forceUnlock: (api, key) => api.forceUnlock(key),
};

const REJECTED = 'rejected with LockConfigError';

@Injectable()
class Jobs {
  ran = 0;

  @Locked('job:{0}', NOW)
  async run(_id: unknown): Promise<void> {
    this.ran++;
  }

  @ReadLocked('doc:{0}', NOW)
  async read(_id: unknown): Promise<void> {
    this.ran++;
  }

  @WriteLocked('doc:{0}', NOW)
  async write(_id: unknown): Promise<void> {
    this.ran++;
  }

  @Locked((id: unknown) => id as string, NOW)
  async byFunction(_id: unknown): Promise<void> {
    this.ran++;
  }
}

beforeAll(async () => {
  const keyPrefix = uniquePrefix('hostile');
  engine = new LockEngine({ redis: server.redis.url, keyPrefix });
  server.atEnd(() => engine.close());
  const moduleRef = await Test.createTestingModule({
    imports: [LockModule.forRoot({ redis: server.redis.url, keyPrefix })],
    providers: [Jobs],
  }).compile();
  ctx = await moduleRef.init();
  server.atEnd(() => ctx.close());
  service = ctx.get(LockService);
  jobs = ctx.get(Jobs);
  // Connect both and let their script preloads finish, so that from here on the
  // counters move only when a lock call reaches Redis.
  for (const api of [engine, service]) await (await api.acquire('warm-up')).release();
  await quiet();
});

/** Every command the server has run so far, except the INFO calls that read the count. */
async function commandsRun(): Promise<number> {
  const stats = await server.admin.info('commandstats');
  let calls = 0;
  for (const m of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (m[1] !== 'info') calls += Number(m[2]);
  }
  return calls;
}

/** Waits until the server sees no more commands for a while. */
async function quiet(): Promise<void> {
  let last = await commandsRun();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = await commandsRun();
    if (now === last) return;
    last = now;
  }
}

/** How a call ended: a LockConfigError of a sane size is `REJECTED`, anything else says what happened. */
async function outcome(call: () => Promise<unknown>): Promise<string> {
  let pending: Promise<unknown>;
  try {
    pending = call();
  } catch (err) {
    return `threw instead of rejecting: ${String(err)}`;
  }
  try {
    await pending;
    return 'resolved';
  } catch (err) {
    if (!(err instanceof LockConfigError)) return `rejected with ${String(err).slice(0, 200)}`;
    if (err.message.length > 500) return `rejected with a ${err.message.length}-character message`;
    return REJECTED;
  }
}

/** Runs the calls one after another, and checks the server ran no command for any of them. */
async function expectRejectedUntouched(calls: Record<string, () => Promise<unknown>>): Promise<void> {
  const [before, keys] = [await commandsRun(), await server.admin.dbsize()];
  const seen: Record<string, string> = {};
  for (const [name, call] of Object.entries(calls)) seen[name] = await outcome(call);
  expect(seen).toEqual(Object.fromEntries(Object.keys(calls).map((name) => [name, REJECTED])));
  expect(await commandsRun()).toBe(before + 1); // the DBSIZE above
  expect(await server.admin.dbsize()).toBe(keys);
}

describe.each(HOSTILE_KEYS)('%s as a lock key', (_name, key) => {
  it('is rejected by every method of LockEngine and LockService, before Redis is touched', async () => {
    let ran = 0;
    const work = (): void => {
      ran++;
    };
    const calls: Record<string, () => Promise<unknown>> = {};
    for (const [apiName, api] of [
      ['LockEngine', engine],
      ['LockService', service],
    ] as const) {
      for (const [method, call] of Object.entries(CALLS)) {
        calls[`${apiName}.${method}`] = () => call(api, key as string, work);
      }
    }
    await expectRejectedUntouched(calls);
    expect(ran).toBe(0);
  });

  it('is rejected as a decorated method argument or key function result, and the method never runs', async () => {
    await expectRejectedUntouched({
      '@Locked': () => jobs.run(key),
      '@ReadLocked': () => jobs.read(key),
      '@WriteLocked': () => jobs.write(key),
      '@Locked(key function)': () => jobs.byFunction(key),
    });
    expect(jobs.ran).toBe(0);
  });
});

describe('a key template with a stray or empty brace', () => {
  /** Applies `decorator` to a fresh class's one-parameter method, as TypeScript does when the class is defined. */
  function decorate(decorator: LockMethodDecorator): void {
    class Job {
      async run(_id: string): Promise<void> {}
    }
    decorator(Job.prototype, 'run', Object.getOwnPropertyDescriptor(Job.prototype, 'run')!);
  }

  it.each(['job:{0', 'job:}', 'job:{}', 'job:{0}}', 'job:{{0}'])(
    '%p is refused with LockConfigError when the class is defined, not taken as one literal key',
    async (template) => {
      const before = await commandsRun();
      for (const decorator of [Locked, ReadLocked, WriteLocked, ScheduledLock]) {
        expect(() => decorate(decorator(template))).toThrow(LockConfigError);
      }
      expect(await commandsRun()).toBe(before);
    },
  );

  it('is refused in decorator syntax too', () => {
    expect(() => {
      class Report {
        @Locked('report:{0')
        async build(_day: string): Promise<void> {}
      }
      return Report;
    }).toThrow(/key "report:\{0" has an unmatched "\{"/);
  });
});
