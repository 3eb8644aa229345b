import fc from 'fast-check';
import { LockEngine } from 'lockwarden/core';
import { LockConfigError, LockError } from 'lockwarden/errors';
import type { LockHandle } from 'lockwarden/core';
import { redisForFile, uniquePrefix } from '../harness/redis';
import { closeNow } from '../harness/engines';
import { Lines } from '../harness/lines';

/**
 * Property tests of the public engine API against a real Redis: whatever the
 * keys, options and call orders, every outcome is a success or a typed
 * LockError, bad input never reaches Redis, and no callback runs unlocked.
 * (Unhandled rejections fail the file through the shared setup.)
 */
// Its own server: the "never reaches Redis" check counts every script call on it.
const server = redisForFile({ own: true });
let engines: LockEngine[];

beforeAll(async () => {
  const keyPrefix = uniquePrefix('fuzz');
  const lines = new Lines();
  engines = [0, 1].map(() => new LockEngine({ redis: server.redis.url, keyPrefix, leaseMs: 2_000, waitMs: 50 }, lines));
  server.atEnd(() => Promise.all(engines.map(closeNow)));
  // Each engine checks its Redis user's permissions once connected, with a script: done before
  // the script calls are counted.
  await lines.until('debug', /may run every command Lockwarden needs/, 2);
});

/** Script calls the server has run so far. */
async function scriptCalls(): Promise<number> {
  const stats = await server.admin.info('commandstats');
  let calls = 0;
  for (const m of stats.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(m[1]);
  return calls;
}

const option = fc.oneof(
  fc.constant(undefined),
  fc.integer({ min: -5, max: 3_000 }),
  fc.double(),
  fc.boolean(),
  fc.string(),
  fc.constant(null),
);
const optionsArb = fc.oneof(
  fc.constant(undefined),
  fc.record(
    {
      ttlMs: option,
      waitMs: option,
      fair: option,
      maxHoldMs: option,
      lockAtLeastMs: option,
      leaseMs: option,
      renew: option,
    },
    { requiredKeys: [] },
  ),
  fc.dictionary(fc.string({ maxLength: 8 }), option, { maxKeys: 2 }),
  fc.anything(),
);
const codeUnit = fc.nat(0xffff).map((c) => String.fromCharCode(c));
const keyArb = fc.oneof(
  fc.constantFrom('a', 'b', 'c'),
  fc.string({ maxLength: 20 }),
  fc.string({ minLength: 1020, maxLength: 1030 }),
  // Any UTF-16 code units, lone surrogates included: Redis would store those as U+FFFD.
  fc.string({ unit: fc.oneof(fc.constantFrom('\uD800', '\uDC00'), codeUnit), minLength: 1, maxLength: 6 }),
  fc.anything(),
);

describe('fuzzing the public API', () => {
  it('answers any key and options with a lock or a typed error, and bad input never reaches Redis', async () => {
    await fc.assert(
      fc.asyncProperty(
        keyArb,
        optionsArb,
        fc.constantFrom('acquire', 'tryAcquire', 'withLock'),
        async (key, options, call) => {
          const e = engines[0];
          const before = await scriptCalls();
          let ranUnlocked = false;
          let refused = false;
          try {
            const k = key as string;
            const opts = options as Parameters<LockEngine['acquire']>[1];
            if (call === 'withLock') {
              await e.withLock(
                k,
                async (lock) => {
                  // A lease of a few ms may rightly lapse before this look: what must never be is
                  // the library claiming a lock whose key is gone (read first, so a claim made after
                  // the read is no excuse).
                  const present = (await server.admin.exists(`${e.options.keyPrefix}{${lock.key}}`)) === 1;
                  ranUnlocked = !present && lock.isHeld();
                },
                opts,
              );
            } else {
              const lock = await (call === 'acquire' ? e.acquire(k, opts) : e.tryAcquire(k, opts));
              await lock?.release();
            }
          } catch (err) {
            expect(err).toBeInstanceOf(LockError);
            refused = err instanceof LockConfigError;
            if (refused) expect(await scriptCalls()).toBe(before);
          }
          expect(ranUnlocked).toBe(false);
          // Two such keys would be one lock in Redis while reentrancy told them apart.
          if (typeof key === 'string' && /\p{Surrogate}/u.test(key)) expect(refused).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('survives any order of acquire, release, extend, loss and cross-context release', async () => {
    const step = fc.oneof(
      fc.record({ op: fc.constant('acquire' as const), engine: fc.nat(1), key: fc.constantFrom('x', 'y') }),
      fc.record({ op: fc.constant('release' as const), handle: fc.nat(5) }),
      fc.record({
        op: fc.constant('extend' as const),
        handle: fc.nat(5),
        ms: fc.option(fc.integer({ min: -1, max: 5_000 })),
      }),
      fc.record({ op: fc.constant('delete' as const), key: fc.constantFrom('x', 'y') }),
      fc.record({ op: fc.constant('releaseElsewhere' as const), handle: fc.nat(5) }),
      fc.record({ op: fc.constant('nested' as const), engine: fc.nat(1), key: fc.constantFrom('x', 'y') }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 12 }), async (steps) => {
        const handles: LockHandle[] = [];
        const pick = (i: number): LockHandle | undefined => handles[i % Math.max(1, handles.length)];
        const typed = async (work: () => Promise<unknown>): Promise<void> => {
          try {
            await work();
          } catch (err) {
            expect(err).toBeInstanceOf(LockError);
          }
        };
        for (const s of steps) {
          switch (s.op) {
            case 'acquire':
              await typed(async () => handles.push(await engines[s.engine].acquire(s.key, { waitMs: 0 })));
              break;
            case 'release':
              await typed(async () => pick(s.handle)?.release());
              break;
            case 'extend':
              await typed(async () => pick(s.handle)?.extend(s.ms ?? undefined));
              break;
            case 'delete':
              await server.admin.del(`${engines[0].options.keyPrefix}{${s.key}}`);
              break;
            case 'releaseElsewhere': {
              // From another async context: a timer callback that shares nothing with the acquirer.
              const h = pick(s.handle);
              await typed(
                () =>
                  new Promise((resolve, reject) =>
                    setImmediate(() => (h ? h.release() : Promise.resolve(false)).then(resolve, reject)),
                  ),
              );
              break;
            }
            case 'nested':
              await typed(() =>
                engines[s.engine].withLock(
                  s.key,
                  async (outer) => {
                    const inner = await engines[s.engine].acquire(s.key, { waitMs: 0 });
                    expect(await inner.fencingToken()).toBe(await outer.fencingToken());
                    await inner.release();
                    expect(outer.isHeld() || outer.signal.aborted).toBe(true);
                  },
                  { waitMs: 0 },
                ),
              );
              break;
          }
        }
        await Promise.all(handles.map((h) => typed(() => h.release())));
        // Nothing of ours is left behind: every lock key is gone again (or was never ours).
        expect(engines.reduce((n, e) => n + e.heldLocks, 0)).toBe(0);
      }),
      { numRuns: 150 },
    );
  });
});
