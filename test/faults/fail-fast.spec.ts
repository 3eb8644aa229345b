// A Redis known to be down fails fast: while the engine's connection is refused, closed or lost,
// waiting cannot help, and a waiting acquire fails with LockBackendError once the outage has
// lasted commandTimeoutMs, not at the end of its waitMs; one started after that fails at once.
// A busy lock on a Redis that answers still waits. Timing is checked without clock thresholds:
// a sentinel timer of the wait budget, armed as the call starts, either has not fired when the
// call settles or fired first (timers fire in due order); "at once" is before the event loop
// turns, so without a round trip to Redis.
import { Controller, Get, Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockBackendError, LockEngine, LockModule, LockTimeoutError, Locked, ScheduledLock } from 'lockwarden';
import type { LockEngineOptions } from 'lockwarden';
import { createClient } from 'redis';
import request from 'supertest';
import { clientMaker } from '../harness/clients';
import { closeNow } from '../harness/engines';
import { EventLog } from '../harness/event-log';
import { startedForFile } from '../harness/for-file';
import { redisForFile, uniquePrefix } from '../harness/redis';
import { RedisProcess } from '../harness/redis-process';

// Its own server: the tests stop it, and it is started again after each.
const target = redisForFile({ own: true });
const quorumNodes = startedForFile(
  '3 quorum masters',
  () => Promise.all([0, 1, 2].map(() => RedisProcess.start())),
  (nodes) => Promise.all(nodes.map((n) => n.destroy())),
);
const makers = {
  ioredis: clientMaker('ioredis'),
  'node-redis': clientMaker('node-redis'),
  glide: clientMaker('glide'),
};
const closers: (() => unknown)[] = [];
const stopped = new Set<RedisProcess>();

afterEach(async () => {
  // Servers first: what closes after them finds Redis again, as an app would after an outage.
  for (const server of stopped) await server.restart();
  stopped.clear();
  for (const close of closers.splice(0).reverse()) await close();
  await Promise.all(Object.values(makers).map((m) => m.closeClients()));
});

async function stop(server: RedisProcess): Promise<void> {
  stopped.add(server);
  await server.stop();
}

function engine(options: LockEngineOptions, logger?: Lines): LockEngine {
  const e = new LockEngine(options, logger);
  closers.push(() => closeNow(e));
  return e;
}

/** A logger that keeps its lines, and lets a test wait for one. */
class Lines {
  readonly warns: string[] = [];
  readonly debugs: string[] = [];
  private waiting: { pattern: RegExp; resolve: () => void }[] = [];
  log(): void {}
  error(): void {}
  verbose(): void {}
  warn(message: unknown): void {
    this.add(this.warns, String(message));
  }
  debug(message: unknown): void {
    this.add(this.debugs, String(message));
  }
  /** Resolves once a line (said already, or to come) matches `pattern`. */
  line(pattern: RegExp): Promise<void> {
    if ([...this.warns, ...this.debugs].some((l) => pattern.test(l))) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push({ pattern, resolve }));
  }
  private add(to: string[], line: string): void {
    to.push(line);
    this.waiting = this.waiting.filter((w) => !w.pattern.test(line) || (w.resolve(), false));
  }
}

/** `call()`'s outcome (value or error), and whether it came before a sentinel timer of `ms` armed with it fired. */
async function againstSentinel(
  ms: number,
  call: () => PromiseLike<unknown>,
): Promise<{ outcome: unknown; first: boolean }> {
  let fired = false;
  const sentinel = setTimeout(() => (fired = true), ms);
  const outcome = await Promise.resolve(call()).then(
    (value) => value,
    (err: unknown) => err,
  );
  clearTimeout(sentinel);
  return { outcome, first: !fired };
}

/**
 * Whether `work` settles within one turn of the event loop: no Redis round trip, no timer. (It
 * may take that one turn: a failure without I/O waits for it, so that a caller retrying in a
 * loop lets the connection come back.)
 */
async function settlesAtOnce(work: Promise<unknown>): Promise<boolean> {
  let turned = false;
  // Queued now, this runs in the same turn as what the call queues; the one it queues, in the next.
  const immediate = setImmediate(() => setImmediate(() => (turned = true)));
  await work.catch(() => undefined);
  clearImmediate(immediate);
  return !turned;
}

/** `where`'s "cannot be reached" warning: the engine knows the connection is refused. */
function refused(lines: Lines, server: RedisProcess): Promise<void> {
  return lines.line(new RegExp(`127\\.0\\.0\\.1:${server.port} cannot be reached`));
}

@Controller('ff')
class Routes {
  @Get('work')
  @Locked('ff:route') // waits, by the default waitMs (10 s)
  async work(): Promise<string> {
    return 'ran';
  }
}

describe('a @Locked route that waits (the default waitMs)', () => {
  it('answers 409 after its wait while the lock is busy, and 503 with Retry-After at once while Redis is down', async () => {
    const keyPrefix = uniquePrefix('ff-http');
    const lines = new Lines();
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: target.redis.url, keyPrefix })],
      controllers: [Routes],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: lines });
    await app.init();
    closers.push(() => app.close());
    const { waitMs } = app.get(LockEngine).options;
    const holder = engine({ redis: target.redis.url, keyPrefix });

    // Busy on a Redis that answers: the route waits its whole budget, as before.
    const held = await holder.acquire('ff:route', { leaseMs: 60_000 });
    const busy = await againstSentinel(waitMs, () => request(app.getHttpServer()).get('/ff/work'));
    expect(busy.first).toBe(false);
    expect(busy.outcome).toMatchObject({ status: 409, headers: { 'retry-after': '1' } });
    await held.release();

    // Down: the route answers 503 at once, though what its attempt may have left is still
    // being withdrawn (in the background, until Redis answers).
    await stop(target.redis.process!);
    await refused(lines, target.redis.process!);
    const down = await againstSentinel(waitMs, () => request(app.getHttpServer()).get('/ff/work'));
    expect(down.first).toBe(true);
    expect(down.outcome).toMatchObject({ status: 503, headers: { 'retry-after': '1' } });
  }, 30_000);
});

describe.each([
  ['ioredis (its own)', 'ioredis', /unreachable \(connection refused\)/],
  ['a given node-redis client', 'node-redis', /unreachable \(connection refused\)/],
  ['a given GLIDE client', 'glide', /unreachable \(no connection open/],
] as const)('an engine through %s', (_what, kind, why) => {
  it('fails an acquire waiting for a busy lock once Redis has been down for commandTimeoutMs, and a new one at once', async () => {
    const keyPrefix = uniquePrefix(`ff-${kind}`);
    const events = new EventLog();
    const topology = await makers[kind].connect(target.redis.url);
    const e = engine({ ...topology, keyPrefix, onEvent: events.listener } as LockEngineOptions);
    const holder = engine({ redis: target.redis.url, keyPrefix });
    await (await e.acquire('warm-up')).release();
    await holder.acquire('busy', { leaseMs: 60_000 });

    const parked = events.next({ type: 'waiting', key: 'busy' });
    const waiting = againstSentinel(e.options.waitMs, () => e.acquire('busy'));
    await parked;
    await stop(target.redis.process!);
    const { outcome, first } = await waiting;
    expect(outcome).toBeInstanceOf(LockBackendError);
    expect((outcome as Error).message).toMatch(why);
    expect(first).toBe(true);

    // Known down for commandTimeoutMs: withLock fails without asking Redis, and says why.
    const fresh = e.withLock('fresh', () => 'ran');
    expect(await settlesAtOnce(fresh)).toBe(true);
    await expect(fresh).rejects.toThrow(why);
    await expect(fresh).rejects.toBeInstanceOf(LockBackendError);
  }, 30_000);
});

describe('@ScheduledLock through a given node-redis client', () => {
  @Injectable()
  class Job {
    runs = 0;
    @ScheduledLock('ff-job', { schedule: { everyMs: 3_600_000 } })
    async run(): Promise<void> {
      this.runs++;
    }
  }

  it('fails a tick fast while Redis is down, saying why, and hands off the claim that reaches Redis later', async () => {
    // It queues commands while it reconnects, and reconnects soon after Redis is back, so the
    // claim it queued reaches Redis (node-redis fails a queued command after 5 s by default).
    const client = createClient({
      url: target.redis.url,
      socket: { reconnectStrategy: () => 50 },
      commandOptions: { timeout: 60_000 },
    });
    client.on('error', () => undefined); // as an application does; node-redis throws its errors otherwise
    await client.connect();
    closers.push(() => client.isOpen && client.destroy());
    const keyPrefix = uniquePrefix('ff-tick');
    const lines = new Lines();
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ client, keyPrefix })],
      providers: [Job],
    }).compile();
    moduleRef.useLogger(lines);
    const app = await moduleRef.init();
    closers.push(() => app.close());

    // Not events.once: that rejects on the 'error' node-redis emits first.
    const lost = new Promise((resolve) => client.once('reconnecting', resolve));
    await stop(target.redis.process!);
    await lost;
    // The claim waits in node-redis's queue for a connection: the tick gives up on it.
    const tick = await againstSentinel(app.get(LockEngine).options.waitMs, () => app.get(Job).run());
    expect(tick).toEqual({ outcome: undefined, first: true });
    expect(app.get(Job).runs).toBe(0);
    const said = lines.warns.filter((l) => l.startsWith('Tick '));
    expect(said).toEqual([
      expect.stringMatching(
        /^Tick (\S+) of "ff-job" did not run: Redis at 127\.0\.0\.1:\d+ is unreachable \(connection refused\), and has been for \d+ ms\.$/,
      ),
    ]);

    // Once Redis is back, the claim still queued takes the tick; it is handed off to the job's next holder.
    const handedOff = lines.line(/of "ff-job" was taken in Redis after this instance gave up on it: handed off/);
    stopped.delete(target.redis.process!);
    await target.redis.process!.restart();
    await handedOff;
    const at = Date.parse(/^Tick (\S+) of/.exec(said[0])![1]);
    expect(await target.admin.get(`${keyPrefix}{ff-job}:handed-off`)).toBe(String(at));
    expect(await target.admin.exists(`${keyPrefix}{ff-job}:tick:${at}`)).toBe(0);
  }, 30_000);
});

describe('a quorum of 3', () => {
  it('still waits for a busy lock with one node down, and fails fast once a second one is', async () => {
    const nodes = quorumNodes.value();
    const keyPrefix = uniquePrefix('ff-quorum');
    const lines = new Lines();
    const events = new EventLog();
    const quorum = { nodes: nodes.map((n) => n.url) };
    const e = engine({ quorum, keyPrefix, onEvent: events.listener }, lines);
    const holder = engine({ quorum, keyPrefix });
    await e.withLock('warm-up', () => undefined);
    await holder.acquire('busy', { leaseMs: 60_000 });

    // One node down is no outage: a busy lock is waited for past commandTimeoutMs, and a free
    // one is taken on the other two.
    await stop(nodes[0]);
    await refused(lines, nodes[0]);
    const { commandTimeoutMs } = e.options;
    await expect(e.acquire('busy', { waitMs: 2 * commandTimeoutMs })).rejects.toBeInstanceOf(LockTimeoutError);
    expect(await e.withLock('one-down', () => 'ran')).toBe('ran');

    // Two down leave no majority.
    const parked = events.next({ type: 'waiting', key: 'busy' });
    const waiting = againstSentinel(e.options.waitMs, () => e.acquire('busy'));
    await parked;
    await stop(nodes[1]);
    const { outcome, first } = await waiting;
    expect(outcome).toBeInstanceOf(LockBackendError);
    expect((outcome as Error).message).toMatch(
      /a majority of the quorum's nodes \(2 of 3: Redis at [\d.:]+, Redis at [\d.:]+\) is unreachable \(connection refused\)/,
    );
    expect(first).toBe(true);
    const fresh = e.acquire('fresh');
    expect(await settlesAtOnce(fresh)).toBe(true);
    await expect(fresh).rejects.toBeInstanceOf(LockBackendError);
  }, 30_000);
});
