import { Redis } from 'ioredis';
import { LockEngine } from 'lockwarden/core';
import { LockBackendError, LockConfigError, LockLostError, LockTimeoutError } from 'lockwarden/errors';
import type { LockEngineOptions } from 'lockwarden/core';
import { aborted, EventLog } from '../harness/event-log';
import { FaultProxy } from '../harness/fault-proxy';
import { uniquePrefix } from '../harness/redis';
import { RedisProcess } from '../harness/redis-process';
import { closeNow } from '../harness/engines';
import { StallAfterWrite } from '../harness/stall';
import { startedForFile } from '../harness/for-file';

/** Redlock across 5 independent masters, each behind a fault proxy that can cut it off. */
const five = startedForFile(
  '5 masters',
  async () => {
    const processes = await Promise.all(Array.from({ length: 5 }, () => RedisProcess.start()));
    const proxies = await Promise.all(processes.map((m) => FaultProxy.start({ host: m.host, port: m.port })));
    return { processes, proxies, direct: processes.map((m) => new Redis(m.url)) };
  },
  async ({ processes, proxies, direct }) => {
    for (const c of direct) c.disconnect();
    await Promise.all(proxies.map((p) => p.stop()));
    await Promise.all(processes.map((m) => m.destroy()));
  },
);
/** The masters' fault proxies (what the engines reach them through), and a client of each master direct. */
const masters = {
  get proxies(): FaultProxy[] {
    return five.value().proxies;
  },
  get direct(): Redis[] {
    return five.value().direct;
  },
};
const engines: LockEngine[] = [];

afterEach(async () => {
  for (const p of masters.proxies) p.pass();
  await Promise.all(engines.splice(0).map(closeNow));
});

/**
 * A quorum engine. The node timeout is generous unless a test is about it: a busy test
 * machine can stall the in-process proxies for a few hundred ms, and that is not a fault
 * these tests mean to inject.
 */
function engine(options: Partial<LockEngineOptions> = {}, events?: EventLog, nodeTimeoutMs = 1_000): LockEngine {
  const e = new LockEngine({
    quorum: { nodes: masters.proxies.map((p) => p.url), nodeTimeoutMs },
    keyPrefix: uniquePrefix('quorum'),
    onEvent: events?.listener,
    ...options,
  });
  engines.push(e);
  return e;
}

/** On how many masters `key`'s lock hash exists right now. */
async function heldOn(e: LockEngine, key: string): Promise<number> {
  const found = await Promise.all(masters.direct.map((c) => c.exists(`${e.options.keyPrefix}{${key}}`)));
  return found.reduce((a, b) => a + b, 0);
}

describe('quorum (Redlock across 5 masters)', () => {
  it('acquires for every subset of masters that is down iff at least 3 are up', async () => {
    // Each subset with a master down waits out one node timeout: 26 of them. A master that is
    // up must answer within it, through the proxy, while this process is loaded: a second.
    const e = engine({ leaseMs: 10_000 });
    // Connections and scripts, before the clock matters: on a loaded machine the first
    // connects can take longer than the short node timeout, so try until they are up.
    for (let attempt = 1; ; attempt++) {
      try {
        await e.withLock('warm-up', () => undefined);
        break;
      } catch (err) {
        if (!(err instanceof LockBackendError) || attempt >= 20) throw err;
      }
    }
    const outcomes: string[] = [];
    for (let down = 0; down < 32; down++) {
      const up = 5 - popcount(down);
      masters.proxies.forEach((p, i) => (down & (1 << i) ? p.blackhole() : p.pass()));
      const key = `subset-${down}`;
      const got = await e.tryAcquire(key).then(
        (lock) => (lock ? 'acquired' : 'busy'),
        (err: unknown) => (err instanceof LockBackendError ? 'unreachable' : String(err)),
      );
      outcomes.push(`${up} up: ${got}`);
      expect(`${up} up: ${got}`).toBe(`${up} up: ${up >= 3 ? 'acquired' : 'unreachable'}`);
      for (const p of masters.proxies) p.pass();
      if (got === 'acquired') await e.current(key)?.release();
    }
    expect(outcomes).toHaveLength(32);
  }, 120_000);

  it('keeps a lock through the loss of 2 masters, and aborts the holder when a third goes', async () => {
    const events = new EventLog();
    const e = engine({ leaseMs: 3_000 }, events);
    const lock = await e.acquire('survivor');
    expect(await heldOn(e, 'survivor')).toBe(5);
    masters.proxies[0].blackhole();
    masters.proxies[1].blackhole();
    await events.renewals('survivor', 3);
    expect(lock.isHeld()).toBe(true);
    expect(lock.signal.aborted).toBe(false);
    masters.proxies[2].blackhole();
    expect(await aborted(lock.signal)).toBeInstanceOf(LockLostError);
    expect(lock.isHeld()).toBe(false);
  });

  it('counts a master slower than the node timeout as down', async () => {
    const e = engine({ leaseMs: 10_000 }, undefined, 400);
    await e.withLock('warm-up', () => undefined);
    // 2 s of delay against a 400 ms node timeout: two slow masters leave a majority of three.
    masters.proxies[0].delay(2_000);
    masters.proxies[1].delay(2_000);
    const lock = await e.acquire('slow-minority', { waitMs: 0 });
    await lock.release();
    masters.proxies[2].delay(2_000);
    await expect(e.acquire('slow-majority', { waitMs: 0 })).rejects.toBeInstanceOf(LockBackendError);
  });

  it("gives a holder's calls its node timeouts on top of commandTimeoutMs", async () => {
    // Two masters answer after 600 ms, within the 1 s node timeout and past commandTimeoutMs:
    // a release and an extension wait for them, as an acquire does, and succeed.
    const e = engine({ leaseMs: 10_000, commandTimeoutMs: 300 });
    await e.withLock('warm-up', () => undefined);
    const lock = await e.acquire('slow-pair');
    masters.proxies[0].delay(600);
    masters.proxies[1].delay(600);
    await expect(lock.extend()).resolves.toBeUndefined();
    expect(await lock.release()).toBe(true);
    expect(await heldOn(e, 'slow-pair')).toBe(0);
  });

  it('excludes other holders, and releases everywhere', async () => {
    const prefix = uniquePrefix('quorum-pair');
    const a = engine({ keyPrefix: prefix });
    const b = engine({ keyPrefix: prefix });
    const lock = await a.acquire('shared');
    await expect(b.acquire('shared', { waitMs: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
    const waiter = b.acquire('shared', { waitMs: 30_000 });
    const lockToken = await lock.fencingToken();
    expect(await lock.release()).toBe(true);
    const next = await waiter;
    expect(await next.fencingToken()).toBeGreaterThan(lockToken);
    await next.release();
    expect(await heldOn(a, 'shared')).toBe(0);
  });

  it('keeps fencing tokens rising when the next holder has a different majority', async () => {
    const e = engine();
    const counter = `${e.options.keyPrefix}{fenced}:fence`;
    await e.withLock('fenced', () => undefined); // seeds every master's counter
    const seeded = Math.max(...(await Promise.all(masters.direct.map((c) => c.get(counter)))).map(Number));
    // The masters' counters disagree (as after earlier minority failures): master 0 is far ahead.
    // 100 s ahead, so above the server clock too (tokens are max(counter + 1, clock µs)).
    await masters.direct[0].set(counter, seeded + 100_000_000);
    const first = await e.acquire('fenced');
    const firstToken = await first.fencingToken();
    expect(firstToken).toBe(seeded + 100_000_001);
    await first.release();
    // The next holder's majority leaves master 0 out; it still gets a higher token.
    masters.proxies[0].blackhole();
    masters.proxies[1].blackhole();
    const second = await e.acquire('fenced');
    expect(await second.fencingToken()).toBeGreaterThan(firstToken);
    await second.release();
  });

  it('mutually excludes 40 flows from two engines on one key', async () => {
    const prefix = uniquePrefix('quorum-mx');
    const [a, b] = [engine({ keyPrefix: prefix }), engine({ keyPrefix: prefix })];
    let inside = 0;
    let overlap = 0;
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 2 ? a : b).withLock('counter', async () => {
          if (++inside > 1) overlap++;
          await masters.direct[0].ping();
          inside--;
        }),
      ),
    );
    expect(overlap).toBe(0);
  });

  it('refuses read/write locks and fair acquires before touching Redis', async () => {
    const e = engine();
    await expect(e.acquireRead('rw')).rejects.toBeInstanceOf(LockConfigError);
    await expect(e.withWriteLock('rw', () => 1)).rejects.toBeInstanceOf(LockConfigError);
    await expect(e.acquire('f', { fair: true })).rejects.toBeInstanceOf(LockConfigError);
    expect(await heldOn(e, 'rw')).toBe(0);
  });

  it('hears the answers that arrived while the process stalled past the node timeout', async () => {
    // Node runs expired timers before it reads sockets: after a stall, each node's timeout
    // would call it silent while its answer sits unread, and a quorum of answers would be lost.
    const nodeTimeoutMs = 200;
    const clients = five.value().processes.map((m) => new Redis(m.url));
    const disconnect = (): void => clients.forEach((c) => c.disconnect());
    // Once every node's call is written (the same turn), the process is busy past the timeout.
    const stalls = clients.map((client) => new StallAfterWrite(client, ['evalsha', 'eval'], 2 * nodeTimeoutMs));
    let e: LockEngine;
    try {
      // Clients of the test's own as the nodes, as an application may pass.
      e = new LockEngine({ quorum: { nodes: clients, nodeTimeoutMs }, keyPrefix: uniquePrefix('q-stall') });
    } catch (err) {
      disconnect();
      throw err;
    }
    engines.push(e);
    try {
      await (await e.acquire('warm', { waitMs: 0 })).release();
      stalls[0].arm();
      const lock = await e.acquire('k', { waitMs: 0 });
      expect(stalls[0].happened).toBe(true);
      expect(lock.isHeld()).toBe(true);
      expect(await heldOn(e, 'k')).toBe(5);
      await lock.release();
    } finally {
      await closeNow(engines.pop()!);
      disconnect();
    }
  });

  it('rejects bad quorum options with a typed error', () => {
    const bad: unknown[] = [
      { quorum: { nodes: [masters.proxies[0].url, masters.proxies[1].url] } },
      { quorum: { nodes: masters.proxies.map((p) => p.url), nodeTimeoutMs: 0 } },
      { quorum: { nodes: masters.proxies.map((p) => p.url), nodeTimeout: 5 } },
      { quorum: { nodes: masters.proxies.map((p) => p.url) }, redis: masters.proxies[0].url },
      { quorum: { nodes: [{ cluster: [] }, masters.proxies[0].url, masters.proxies[1].url] } },
    ];
    for (const options of bad) {
      expect(() => new LockEngine(options as LockEngineOptions)).toThrow(LockConfigError);
    }
  });
});

function popcount(n: number): number {
  let c = 0;
  for (let m = n; m; m >>= 1) c += m & 1;
  return c;
}
