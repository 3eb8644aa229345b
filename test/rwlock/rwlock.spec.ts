import { LockTimeoutError } from 'lockwarden/errors';
import { workersForFile } from '../harness/child';
import { EventLog } from '../harness/event-log';
import { engineFactory } from '../harness/engines';
import { redisForFile, uniquePrefix } from '../harness/redis';

const server = redisForFile();
const worker = workersForFile();
const { engine, pair } = engineFactory(() => server.redis.url, 'rw');

describe('randomized read/write concurrency', () => {
  it('never lets a writer share the lock, lets readers overlap, and finishes every operation', async () => {
    const PREFIX = uniquePrefix('rwrand');
    const workers = ['A', 'B'].map((NAME) =>
      worker('rw-worker', { REDIS: server.redis.url, PREFIX, FLOWS: '3', OPS: '334', NAME }),
    );
    await Promise.all(workers.map((w) => w.succeeded()));
    for (const w of workers) expect(w.lines).toContain('done 1002');
    // The releases handed the lock to queued waiters: the path under test ran.
    const handed = workers.map((w) => Number(/^handed (\d+)$/m.exec(w.lines.join('\n'))?.[1] ?? 0));
    expect(handed.reduce((a, b) => a + b)).toBeGreaterThan(0);

    const events = await server.admin.lrange(`${PREFIX}log`, 0, -1);
    expect(events).toHaveLength(2 * 2 * 1002);
    const readers = new Set<string>();
    let writer: string | undefined;
    let maxReaders = 0;
    let writes = 0;
    for (const event of events) {
      const [who, what, mode] = event.split(' ');
      if (what === 'enter') {
        expect(writer).toBeUndefined(); // nobody enters while a writer holds it
        if (mode === 'w') {
          expect(readers.size).toBe(0); // a writer enters only an empty lock
          writer = who;
          writes++;
        } else {
          readers.add(who);
          maxReaders = Math.max(maxReaders, readers.size);
        }
      } else if (mode === 'w') {
        expect(writer).toBe(who);
        writer = undefined;
      } else {
        expect(readers.delete(who)).toBe(true);
      }
    }
    expect(maxReaders).toBeGreaterThan(1); // readers really do overlap
    expect(writes).toBeGreaterThan(0);
    expect(readers.size).toBe(0);
    expect(writer).toBeUndefined();
  });
});

describe('writer preference', () => {
  it('keeps a steady stream of new readers from starving a waiting writer', async () => {
    // One log per engine: the writer's "waiting" is told apart from a stream read's (a read
    // that comes right after the writer's first attempt waits too, and may say so first).
    const [writerEvents, events] = [new EventLog(), new EventLog()];
    // The writer's place is sized so that only a stall of this process over 7 s could lapse it
    // (at the default 1 s, a 700 ms stall could, and a read would then rightly get in first).
    const keyPrefix = uniquePrefix('rwpref');
    const [a, b] = [
      engine({ keyPrefix, placeMs: 10_000 }, writerEvents),
      engine({ keyPrefix, placeMs: 10_000 }, events),
    ];
    let seq = 0;
    let stop = false;
    let writerWaitingAt = Infinity;
    let writerGrantedAt = Infinity;
    const lateReads: number[] = [];
    const inFlight = await a.acquireRead('doc'); // a read already in progress when the writer comes
    // A continuous stream of short reads, overlapping the one in progress.
    const streamed = events.next({ type: 'acquired', key: 'doc' }, 5);
    const stream = (async () => {
      while (!stop) {
        const started = ++seq;
        const lock = await b.acquireRead('doc', { waitMs: 60_000 });
        if (started > writerWaitingAt) lateReads.push(++seq);
        await lock.release();
      }
    })();
    await streamed;
    const waiting = writerEvents.next({ type: 'waiting', key: 'doc' });
    const writing = a.acquireWrite('doc', { waitMs: 60_000 }).then((lock) => {
      writerGrantedAt = ++seq;
      return lock;
    });
    await waiting;
    writerWaitingAt = ++seq;
    const late = b.acquireRead('doc', { waitMs: 60_000 }).then((lock) => {
      lateReads.push(++seq);
      return lock;
    });
    await inFlight.release(); // the in-flight read ends: the writer gets in despite the stream
    const writeLock = await writing;
    await writeLock.release();
    await (await late).release();
    stop = true;
    await stream;
    expect(lateReads.length).toBeGreaterThan(0);
    // Every read that started after the writer queued was granted only after the writer.
    for (const grantedAt of lateReads) expect(grantedAt).toBeGreaterThan(writerGrantedAt);
  });

  it("keeps a waiting writer's place on the server for the engine's placeMs", async () => {
    const events = new EventLog();
    const keyPrefix = uniquePrefix('rwplace');
    const [a, b] = [engine({ keyPrefix }, events), engine({ keyPrefix, placeMs: 20_000 }, events)];
    const reader = await a.acquireRead('doc');
    const waiting = events.next({ type: 'waiting', key: 'doc' });
    const writing = b.acquireWrite('doc', { waitMs: 60_000 });
    await waiting;
    // The place is a deadline in server time, in the waiting-writers zset of the lock's keys.
    const places = await server.admin.zrange(`${keyPrefix}{doc}:rw:writers`, '0', '-1', 'WITHSCORES');
    expect(places).toHaveLength(2); // one writer: its token and its deadline
    const deadline = Number(places[1]);
    const [seconds, micros] = await server.admin.time();
    const now = Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000);
    // More than the default 1 s is left, and no more than the 20 s asked for.
    expect(deadline - now).toBeGreaterThan(1_000);
    expect(deadline - now).toBeLessThanOrEqual(20_000);
    await reader.release();
    await (await writing).release();
  });
});

describe('crashed and live readers', () => {
  it('a SIGKILLed reader stops blocking writers after its lease; a live reader keeps renewing', async () => {
    const events = new EventLog();
    const PREFIX = uniquePrefix('rwcrash');
    const e = engine({ keyPrefix: PREFIX, leaseMs: 3_000 }, events); // the live reader: seconds of room for renewals on a busy machine
    const holder = worker('lock-worker', {
      REDIS: server.redis.url,
      PREFIX,
      KEY: 'doc',
      MODE: 'read-hold',
      LEASE_MS: '600',
    });
    await holder.waitFor(/^held/);
    const live = await e.acquireRead('doc');
    holder.kill('SIGKILL');
    await holder.exited;
    await events.renewals('doc', 4); // > the dead reader's 600 ms lease since the kill
    expect(live.isHeld()).toBe(true);
    await expect(e.acquireWrite('doc', { waitMs: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
    const fields = await server.admin.hkeys(`${PREFIX}{doc}:rw`);
    expect(fields.filter((f) => f.startsWith('r:'))).toHaveLength(1); // only the live reader is left
    const writing = e.acquireWrite('doc', { waitMs: 60_000 });
    const liveToken = await live.fencingToken();
    await live.release();
    const w = await writing;
    // No write yet: the read's token is seeded from the clock, so the first write's is above it.
    expect(liveToken).toBeGreaterThan(0);
    expect(await w.fencingToken()).toBeGreaterThan(liveToken);
    await w.release();
  });
});

describe('holds', () => {
  it("a reader's release frees only its own hold", async () => {
    const [a, b] = pair();
    const readerA = await a.acquireRead('own');
    const readerB = await b.acquireRead('own');
    expect(await readerA.release()).toBe(true);
    await expect(a.acquireWrite('own', { waitMs: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
    expect(readerB.isHeld()).toBe(true);
    expect(await readerB.release()).toBe(true);
    const w = await a.acquireWrite('own', { waitMs: 0 });
    await w.release();
  });

  it('gives writes rising fencing tokens and reads the token of the last write', async () => {
    const e = engine();
    const w1 = await e.acquireWrite('f');
    const w1Token = await w1.fencingToken();
    await w1.release();
    const r = await e.acquireRead('f');
    expect(await r.fencingToken()).toBe(w1Token);
    await r.release();
    const w2 = await e.acquireWrite('f');
    expect(await w2.fencingToken()).toBeGreaterThan(w1Token);
    await w2.release();
  });

  it('keeps a mutex and a read/write lock of the same name independent', async () => {
    const e = engine();
    const m = await e.acquire('same');
    const w = await e.acquireWrite('same', { waitMs: 0 });
    expect(m.isHeld() && w.isHeld()).toBe(true);
    await w.release();
    await m.release();
  });
});
