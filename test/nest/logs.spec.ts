// What the library tells an operator, read as one would: one warning when Redis cannot be
// reached and one line when it is back, however many reconnections fail in between; one line
// per scheduled tick an outage cost, not a stack trace; nothing alarming about a fixed-lease lock (renew: false)
// that ended as asked or an acquire that got nothing; and the library's words, not the client's.
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockBackendError, LockEngine, LockLostError, LockModule, ScheduledLock } from 'lockwarden';
import type { LockEngineOptions } from 'lockwarden';
import { aborted, EventLog } from '../harness/event-log';
import { freePort } from '../harness/free-port';
import { RedisProcess } from '../harness/redis-process';
import { redisForFile, uniquePrefix } from '../harness/redis';
import { closeNow } from '../harness/engines';
import { FaultProxy } from '../harness/fault-proxy';
import { Lines } from '../harness/lines';

const CLIENT_WORDS = /maxRetriesPerRequest|max retries per request|Connection is closed|ECONNREFUSED/;

// Its own server: one test stops and restarts it.
const server = redisForFile({ own: true });
const closers: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

function engine(lines: Lines, options: Partial<LockEngineOptions> = {}, events?: EventLog): LockEngine {
  const e = new LockEngine(
    { redis: server.redis.url, keyPrefix: uniquePrefix('logs'), onEvent: events?.listener, ...options },
    lines,
  );
  closers.push(() => closeNow(e));
  return e;
}

/** Resolves once the engine's client has reported `count` more connection errors (failed reconnections). */
function connectionErrors(e: LockEngine, count: number): Promise<void> {
  const client = e.client;
  // The engine made an ioredis client of its own here (a URL).
  if (!('on' in client)) throw new Error('expected a client with events');
  return new Promise((resolve) => {
    let seen = 0;
    const onError = (): void => {
      if (++seen < count) return;
      client.off('error', onError);
      resolve();
    };
    client.on('error', onError);
  });
}

describe('Redis connection', () => {
  it('warns once when Redis cannot be reached at startup, and says once that it is back', async () => {
    const port = await freePort();
    const lines = new Lines();
    const e = engine(lines, { redis: `redis://127.0.0.1:${port}` });
    await connectionErrors(e, 4); // several reconnections have failed
    // One debug line for them, not one per reconnection (the client retries twice a second).
    expect(lines.of('debug', /Redis connection error/)).toHaveLength(1);
    expect(lines.of('warn')).toEqual([
      `Redis at 127.0.0.1:${port} cannot be reached (connection refused): locks cannot be taken or renewed ` +
        'until it is back. Reconnecting.',
    ]);
    const revived = await RedisProcess.start({ port });
    closers.unshift(() => revived.destroy()); // after the engine closes
    await lines.until('log', /reachable again/);
    await (await e.acquire('after-outage', { waitMs: 2_000 })).release();
    expect(lines.of('log')).toEqual([`Redis at 127.0.0.1:${port} is reachable again.`]);
    expect(lines.of('warn')).toHaveLength(1);
  });

  it('warns once after a lost connection, fails acquires in its own words, and says once that it is back', async () => {
    const lines = new Lines();
    const e = engine(lines);
    await (await e.acquire('warm-up')).release();
    const failing = connectionErrors(e, 4);
    await server.redis.process!.stop();
    try {
      await failing;
      const failed: unknown = await e.acquire('during-outage', { waitMs: 0 }).catch((err: unknown) => err);
      expect(failed).toBeInstanceOf(LockBackendError);
      const err = failed as LockBackendError;
      expect(err.message).toMatch(/^Redis failed while trying to acquire lock "during-outage": /);
      expect(err.message).toMatch(/refused the connection|the connection to Redis is down/);
      expect(err.message).not.toMatch(CLIENT_WORDS);
      expect(err.cause).toHaveProperty('message'); // what the client said is kept, as the cause
    } finally {
      await server.redis.process!.restart();
    }
    await lines.until('log', /reachable again/);
    const { port } = server.redis.process!;
    expect(lines.of('warn')).toEqual([
      `Redis at 127.0.0.1:${port} cannot be reached (connection refused): locks cannot be taken or renewed ` +
        'until it is back. Reconnecting.',
    ]);
    expect(lines.of('log')).toEqual([`Redis at 127.0.0.1:${port} is reachable again.`]);
    expect(lines.all.filter((l) => CLIENT_WORDS.test(l.text))).toEqual([]);
  });

  it('says nothing of withdrawing for a lock an acquire never got', async () => {
    const lines = new Lines();
    // The cleanup after a failed attempt is retried until what it could have left has lapsed:
    // a lease and a command timeout, kept short here so that it gives up soon.
    const e = engine(lines, { redis: `redis://127.0.0.1:${await freePort()}`, leaseMs: 200, commandTimeoutMs: 50 });
    await expect(e.acquire('never-held', { waitMs: 0 })).rejects.toBeInstanceOf(LockBackendError);
    await lines.until('debug', /"never-held"/);
    expect(lines.of('debug', /"never-held"/)).toEqual([
      expect.stringMatching(/^An acquire of "never-held" that did not get the lock could not be cleaned up after/),
    ]);
    expect(lines.all.filter((l) => /withdraw/i.test(l.text))).toEqual([]);
  });
});

describe('leases that end', () => {
  it('does not call a fixed lease that ran out as asked "lost", yet still aborts its signal', async () => {
    const lines = new Lines();
    const events = new EventLog();
    const e = engine(lines, {}, events);
    const lock = await e.acquire('fixed', { leaseMs: 150, renew: false });
    expect(await aborted(lock.signal)).toBeInstanceOf(LockLostError);
    expect(lock.isHeld()).toBe(false);
    await lock.release();
    expect(events.count({ type: 'lost', key: 'fixed' })).toBe(1); // still counted where losses are
    expect(lines.of('warn')).toEqual([]);
    expect(lines.of('debug', /"fixed"/)).toEqual([
      'Lock "fixed" expired while still held: its fixed lease of 150 ms ran out (it was taken with renew: false); ' +
        'its signal aborted.',
    ]);
  });

  it('warns "lost" once for a lock taken away while its holder still wanted it', async () => {
    const lines = new Lines();
    const events = new EventLog();
    // Warm, and with room: the renewal that finds the key gone must come before the lease ends
    // (else the loss reads "ran out"), on a loaded machine too.
    const e = engine(lines, { leaseMs: 3_000 }, events);
    await (await e.acquire('warm-up')).release();
    const lock = await e.acquire('taken');
    const lost = events.next({ type: 'lost', key: 'taken' });
    await server.admin.del(`${e.options.keyPrefix}{taken}`);
    await lost;
    await lock.release();
    expect(lines.of('warn')).toEqual([
      'Lock "taken" lost: the key is no longer ours in Redis (it expired or was deleted).',
    ]);
  });
});

describe('scheduled ticks during an outage', () => {
  let runs = 0;

  @Injectable()
  class Sweep {
    @ScheduledLock('sweep', { schedule: { everyMs: 60_000 } })
    async run(): Promise<string> {
      runs++;
      return 'swept';
    }

    @ScheduledLock('broken', { schedule: { everyMs: 60_000 } })
    async fail(): Promise<void> {
      throw new Error('the job itself failed');
    }
  }

  async function boot(url: string, lines: Lines) {
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: url, keyPrefix: uniquePrefix('ticks') })],
      providers: [Sweep],
    }).compile();
    moduleRef.useLogger(lines);
    const app = await moduleRef.init();
    closers.push(() => app.close());
    return app.get(Sweep);
  }

  it('says one line per tick that could not run, without a stack, and does not run it', async () => {
    const lines = new Lines();
    const sweep = await boot(`redis://127.0.0.1:${await freePort()}`, lines);
    runs = 0;
    expect(await sweep.run()).toBeUndefined();
    expect(await sweep.run()).toBeUndefined();
    expect(runs).toBe(0);
    const ticks = lines.of('warn', /^Tick /);
    expect(ticks).toHaveLength(2);
    for (const line of ticks) {
      expect(line).toMatch(/^Tick \d{4}-\d\d-\d\dT[\d:.]+Z of "sweep" did not run: [^\n]+\.$/);
      expect(line).not.toMatch(CLIENT_WORDS);
    }
    expect(lines.of('error')).toEqual([]);
  });

  it("leaves the job's own failure to its scheduler", async () => {
    const lines = new Lines();
    const sweep = await boot(server.redis.url, lines);
    await expect(sweep.fail()).rejects.toThrow('the job itself failed');
    expect(lines.of('warn', /^Tick /)).toEqual([]);
  });
});

describe('at the edges of the app’s life', () => {
  it('waits for Redis at bootstrap for commandTimeoutMs at most, boots anyway, and warns once when it got no answer', async () => {
    // A Redis that accepts connections and never answers: a partition, not a refusal.
    const proxy = await FaultProxy.start(server.redis.process!);
    closers.push(() => proxy.stop());
    proxy.blackhole();
    const lines = new Lines();
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: proxy.url, keyPrefix: uniquePrefix('boot'), commandTimeoutMs: 300 })],
    }).compile();
    moduleRef.useLogger(lines);
    const app = await moduleRef.init();
    closers.push(() => app.close());
    expect(lines.of('warn')).toEqual([
      'Redis did not answer within 300 ms (commandTimeoutMs) at bootstrap: the app ' +
        'starts anyway, and acquires fail with LockBackendError until it answers.',
    ]);
  });

  it('boots without a word once Redis answers, having waited for it', async () => {
    const lines = new Lines();
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: server.redis.url, keyPrefix: uniquePrefix('boot') })],
    }).compile();
    moduleRef.useLogger(lines);
    const app = await moduleRef.init();
    closers.push(() => app.close());
    expect((await app.get(LockEngine).health(1_000)).reachable).toBe(true);
    expect(lines.of('warn')).toEqual([]);
  });

  it('warns once, naming the lock, when its release fails at shutdown: it stays held until its lease ends', async () => {
    const proxy = await FaultProxy.start(server.redis.process!);
    closers.push(() => proxy.stop());
    const lines = new Lines();
    const e = engine(lines, { redis: proxy.url, commandTimeoutMs: 300 });
    const lock = await e.acquire('kept', { leaseMs: 30_000 });
    const draining = e.drain(10_000);
    expect(lock.signal.aborted).toBe(true);
    // What a module that closed the shared client first does to the release: no connection.
    proxy.reset();
    await e.releaseAll([lock]);
    await draining;
    const warnings = lines.of('warn', /"kept"/);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^Could not release lock "kept" while shutting down \(.+\): it stays held until its lease ends, in at most \d+ ms\./,
    );
    // Still held in Redis, by its lease.
    const key = `${e.options.keyPrefix}{kept}`;
    expect(await server.admin.pttl(key)).toBeGreaterThan(0);
  });
});
