import { LockEngine, type LockEngineOptions, type LockHandle } from 'lockwarden/core';
import { LockBackendError, LockLostError, LockTimeoutError } from 'lockwarden/errors';
import { aborted, EventLog } from '../harness/event-log';
import { FaultProxy } from '../harness/fault-proxy';
import { checkHistory, type Section } from '../harness/history';
import { redisForFile, uniquePrefix, valkey9 } from '../harness/redis';
import type { ServerKind } from '../harness/redis';
import { cells, describeCells, glideSuiteServer } from '../harness/cells';
import { closeNow } from '../harness/engines';
import { CLIENT_KINDS, clientMaker } from '../harness/clients';
import type { AnyClientKind } from '../harness/clients';

/** Faults on one Redis: a restart that loses every key, and a holder cut off by a partition. */
let proxy: FaultProxy;
const engines: LockEngine[] = [];

/**
 * Redis always; Valkey 9 too where it was built (tools/valkey9.sh), whose releases take the
 * server's own compare-and-delete: through ioredis there, node-redis being covered on Redis.
 */
const SERVERS: [string, ServerKind, readonly AnyClientKind[]][] = [
  ['Redis', 'redis', [...CLIENT_KINDS, 'glide']],
  ...(valkey9 ? [['Valkey 9', 'valkey9', ['ioredis', 'glide']] as [string, ServerKind, readonly AnyClientKind[]]] : []),
];

/** npm test's cells: each client once, GLIDE on Valkey 9 where it is built; the rest run in the matrix. */
const inSuite = (server: ServerKind, kind: AnyClientKind): boolean =>
  kind === 'glide' ? server === glideSuiteServer(valkey9) : server === 'redis';
const RUN = SERVERS.map(([name, server, kinds]): [string, ServerKind, readonly AnyClientKind[]] => [
  name,
  server,
  cells(kinds, (kind) => inSuite(server, kind)),
]).filter(([, , kinds]) => kinds.length > 0);

describeCells(
  RUN,
  (name) => `on ${name}`,
  (_name, server, kinds) => {
    const target = redisForFile({ own: true, server });
    beforeAll(async () => {
      const { host, port } = target.redis.process!;
      proxy = await FaultProxy.start({ host, port });
      target.atEnd(() => proxy.stop());
    });

    const makers = {
      ioredis: clientMaker('ioredis'),
      'node-redis': clientMaker('node-redis'),
      glide: clientMaker('glide'),
    };

    afterEach(async () => {
      proxy.pass();
      await Promise.all(engines.splice(0).map(closeNow));
      await Promise.all(Object.values(makers).map((m) => m.closeClients()));
    });

    /** An engine through `kind`, to Redis itself or through the fault proxy. */
    async function engine(
      kind: AnyClientKind,
      via: 'direct' | 'proxy',
      options: Partial<LockEngineOptions>,
      events?: EventLog,
    ): Promise<LockEngine> {
      const topology = await makers[kind].connect(via === 'proxy' ? proxy.url : target.redis.url);
      const e = new LockEngine({ ...topology, onEvent: events?.listener, ...options } as LockEngineOptions);
      engines.push(e);
      return e;
    }

    describeCells(
      kinds.map((kind) => [kind] as const),
      (kind) => `through ${kind}`,
      (kind) => {
        describe('a Redis restart mid-hold (no persistence)', () => {
          it('aborts holders once Redis is back, settles waiters within budget, and serves new locks at once', async () => {
            const keyPrefix = uniquePrefix('restart');
            const events = new EventLog();
            const holder = await engine(kind, 'direct', { keyPrefix, leaseMs: 10_000 }, events);
            const waiting = new EventLog();
            const other = await engine(kind, 'direct', { keyPrefix }, waiting);
            const held = await Promise.all(['a', 'b', 'c'].map((k) => holder.acquire(k)));
            const budgetMs = 4_000;
            const parked = waiting.next({ type: 'waiting' }, 2);
            const waits = ['a', 'b'].map(async (k) => {
              const started = performance.now();
              const outcome = await other.acquire(k, { waitMs: budgetMs }).then(
                async (lock) => {
                  await lock.release();
                  return 'acquired';
                },
                (err: unknown) => (err instanceof LockBackendError || err instanceof LockTimeoutError ? err.name : err),
              );
              return { outcome, ms: performance.now() - started };
            });
            await parked;

            await target.redis.process!.kill();
            await target.redis.process!.restart();

            // Every holder learns of the loss from Redis, not by running out its lease: from the look
            // at every held lock when the connection came back, or from a renewal that reached the
            // empty server first.
            for (const lock of held) {
              const reason = await aborted(lock.signal);
              expect(reason).toBeInstanceOf(LockLostError);
              expect(String((reason as Error).message)).toMatch(/when the connection to .* came back|no longer ours/);
            }
            for (const { outcome, ms } of await Promise.all(waits)) {
              expect(['acquired', 'LockBackendError', 'LockTimeoutError']).toContain(outcome);
              // Never past the budget (plus the one Redis call that may be in flight when it ends).
              expect(ms).toBeLessThanOrEqual(budgetMs + holder.options.commandTimeoutMs);
            }
            // Usable again within a second of Redis coming back.
            const fresh = await other.acquire('fresh', { waitMs: 1_000 });
            expect(await fresh.fencingToken()).toBeGreaterThan(0);
            await fresh.release();
          });
        });

        describe('a holder cut off from Redis by a partition', () => {
          it('aborts the holder before its lease can end on the server; the next holder never overlaps it', async () => {
            const keyPrefix = uniquePrefix('partition');
            // 3 s, as on a Cluster: a loaded machine's stall before the token is read must not end it.
            const cutOff = await engine(kind, 'proxy', { keyPrefix, leaseMs: 3_000 });
            const healthy = await engine(kind, 'direct', { keyPrefix });
            const sections: Section[] = [];
            const first = await cutOff.acquire('p');
            // Listened for at once: an abort while the test still reads would otherwise go unrecorded.
            let abortedAt = Infinity;
            first.signal.addEventListener('abort', () => (abortedAt = performance.now()));
            // Read while held: once cut off and lost, a read rejects and mints nothing.
            const firstToken = await first.fencingToken();
            const firstEntry = await serverTime();

            proxy.blackhole();
            const next = await healthy.acquire('p', { waitMs: 10_000 });
            const grantedAt = performance.now();
            const nextEntry = await serverTime();

            expect(first.signal.reason).toBeInstanceOf(LockLostError);
            expect(abortedAt).toBeLessThan(grantedAt);
            sections.push(
              { key: 'p', token: firstToken, entry: firstEntry, exit: firstEntry, aborted: true },
              await closeSection(next, nextEntry),
            );
            expect(checkHistory(sections)).toEqual([]);
            expect(sections[1].token).toBeGreaterThan(firstToken);
            await expect(first.fencingToken()).rejects.toBeInstanceOf(LockLostError);
          });
        });

        describe('a connection reset while holding', () => {
          it('retries renewal within the lease over a new connection, and keeps the lock', async () => {
            const events = new EventLog();
            const e = await engine(kind, 'proxy', { keyPrefix: uniquePrefix('reset'), leaseMs: 6_000 }, events);
            const lock = await e.acquire('kept');
            const dropped = proxy.connections;
            proxy.reset(); // every connection through the proxy is reset, and new ones too, until pass()
            expect(proxy.connections).toBe(0);
            expect(dropped).toBeGreaterThan(0);
            proxy.pass();
            await events.renewals('kept', 2);
            expect(lock.isHeld()).toBe(true);
            expect(lock.signal.aborted).toBe(false);
            expect(await lock.release()).toBe(true);
          });
        });

        describe("a holder's call Redis never answers (a partition while holding)", () => {
          it('settles by commandTimeoutMs: release, token read and extension with LockBackendError, withLock with the work done', async () => {
            const keyPrefix = uniquePrefix('calls-silent');
            const commandTimeoutMs = 400;
            const e = await engine(kind, 'proxy', { keyPrefix, leaseMs: 2_000, commandTimeoutMs });
            const healthy = await engine(kind, 'direct', { keyPrefix });
            // Checked without a clock threshold: a sentinel timer armed as the calls start, a little
            // past their budget, must not fire first (timers fire in due order).
            let fired = false;
            let sentinel: NodeJS.Timeout | undefined;
            const arm = (): void => {
              sentinel = setTimeout(() => (fired = true), commandTimeoutMs + 200);
            };
            const settledInTime = (): void => {
              clearTimeout(sentinel);
              expect(fired).toBe(false);
            };
            const noAnswer = (action: string, key: string): RegExp =>
              new RegExp(`${action} lock "${key}": Redis did not answer within 400 ms \\(commandTimeoutMs\\)`);

            // A plain grant: its fencing token is minted on first read.
            const held = await e.acquire('t');
            proxy.blackhole();
            arm();
            const [extended, token] = await Promise.all([
              held.extend().catch((err: unknown) => err),
              held.fencingToken().catch((err: unknown) => err),
            ]);
            settledInTime();
            expect(extended).toBeInstanceOf(LockBackendError);
            expect((extended as Error).message).toMatch(noAnswer('extend', 't'));
            expect(token).toBeInstanceOf(LockBackendError);
            expect((token as Error).message).toMatch(noAnswer('read the fencing token of', 't'));

            arm();
            const released = await held.release().catch((err: unknown) => err);
            settledInTime();
            expect(released).toBeInstanceOf(LockBackendError);
            expect((released as Error).message).toMatch(noAnswer('release', 't'));

            proxy.pass();
            const value = await e.withLock('w', async () => {
              proxy.blackhole();
              arm();
              return 'done';
            });
            settledInTime();
            // The work ran and is over: a release not answered is logged, not thrown.
            expect(value).toBe('done');
            proxy.pass();
            // Nothing is left stuck: the late releases land, or the leases run out unrenewed.
            for (const key of ['t', 'w']) {
              const next = await healthy.acquire(key, { waitMs: 5_000 });
              expect(await next.release()).toBe(true);
            }
          });
        });

        async function serverTime(): Promise<number> {
          const client = target.redis.client();
          try {
            const [s, us] = await client.time();
            return Number(s) * 1e6 + Number(us);
          } finally {
            client.disconnect();
          }
        }

        async function closeSection(lock: LockHandle, entry: number): Promise<Section> {
          const exit = await serverTime();
          const section = {
            key: lock.key,
            token: await lock.fencingToken(),
            entry,
            exit,
            aborted: lock.signal.aborted,
          };
          await lock.release();
          return section;
        }

        describe('waitMs is a promise', () => {
          // The acquire must settle by waitMs + 250 ms (SETTLE_GRACE_MS) whatever Redis does. Checked
          // without a clock threshold: a sentinel timer a little past that point is armed right after
          // the call, and the acquire must settle before it fires (timers fire in due order).
          async function settlesInTime(
            e: LockEngine,
            key: string,
            waitMs: number,
          ): Promise<{ outcome: unknown; beforeSentinel: boolean }> {
            const attempt = e.acquire(key, { waitMs }).then(
              (lock) => lock,
              (err: unknown) => err,
            );
            let fired = false;
            const sentinel = setTimeout(() => (fired = true), waitMs + 250 + 50);
            const outcome = await attempt;
            const beforeSentinel = !fired;
            clearTimeout(sentinel);
            return { outcome, beforeSentinel };
          }

          it.each([
            ['silent (a partition: nothing answers, nothing resets)', 'blackhole'],
            ['slow (every reply 3 s late)', 'delay'],
          ] as const)(
            'settles on time with LockBackendError when Redis is %s, and leaves nothing held once it answers',
            async (_what, fault) => {
              const keyPrefix = uniquePrefix('promise');
              const e = await engine(kind, 'proxy', { keyPrefix });
              await (await e.acquire('warm-up')).release(); // connected, scripts loaded
              if (fault === 'blackhole') proxy.blackhole();
              else proxy.delay(3_000);
              const { outcome, beforeSentinel } = await settlesInTime(e, 'order:1', 1_500);
              expect(outcome).toBeInstanceOf(LockBackendError);
              expect(beforeSentinel).toBe(true);
              // Redis runs one connection's commands in order: once this reply is back, the late
              // attempt and the withdrawal behind it have both run. (A delayed link is healed after,
              // so that nothing overtakes what it still holds back.)
              if (fault === 'blackhole') proxy.pass();
              await e.inspect('order:1');
              proxy.pass();
              const other = await engine(kind, 'direct', { keyPrefix });
              // Warmed first, as the engine under test was: a single try's 250 ms is for one round
              // trip, not for a new engine's first script loads on a loaded machine.
              await (await other.acquire('warm-up')).release();
              const free = await other.tryAcquire('order:1');
              expect(free).not.toBeNull();
              await free!.release();
            },
          );

          // A GLIDE client connects in createClient, before an engine has it: no first connection to wait on.
          (kind === 'glide' ? it.skip : it)(
            "gives an engine's first connection commandTimeoutMs, not a try's 250 ms, and a try 250 ms once connected",
            async () => {
              const keyPrefix = uniquePrefix('promise-cold');
              proxy.delay(300); // connecting and the first attempt take several replies, each 300 ms late
              const cold = await engine(kind, 'proxy', { keyPrefix, commandTimeoutMs: 10_000 });
              const lock = await cold.tryAcquire('order:3');
              expect(lock).not.toBeNull();
              // Connected now: a reply 300 ms late is past a try's budget.
              const late = await cold.tryAcquire('order:4').catch((err: unknown) => err);
              expect(late).toBeInstanceOf(LockBackendError);
              expect((late as Error).message).toMatch(/did not answer within 250 ms\. /);
              // A cold engine that gets no answer says its budget included connecting.
              const unanswered = await engine(kind, 'proxy', { keyPrefix, commandTimeoutMs: 400 });
              const failed = await unanswered.tryAcquire('order:5').catch((err: unknown) => err);
              expect(failed).toBeInstanceOf(LockBackendError);
              expect((failed as Error).message).toMatch(/did not answer within 400 ms, connecting included/);
              await cold.inspect('order:4'); // what the late try left has been withdrawn behind it
              proxy.pass();
              await lock!.release();
              const other = await engine(kind, 'direct', { keyPrefix });
              for (const key of ['order:3', 'order:4']) {
                const free = await other.tryAcquire(key);
                expect(free).not.toBeNull();
                await free!.release();
              }
            },
          );

          it('settles on time with LockBackendError when Redis refuses every connection', async () => {
            const keyPrefix = uniquePrefix('promise-reset');
            const e = await engine(kind, 'proxy', { keyPrefix });
            await (await e.acquire('warm-up')).release();
            proxy.reset();
            const { outcome, beforeSentinel } = await settlesInTime(e, 'order:2', 1_500);
            expect(outcome).toBeInstanceOf(LockBackendError);
            expect(beforeSentinel).toBe(true);
            proxy.pass();
            const other = await engine(kind, 'direct', { keyPrefix });
            const free = await other.acquire('order:2', { waitMs: 10_000 });
            await free.release();
          });
        });
      },
    );
  },
);
