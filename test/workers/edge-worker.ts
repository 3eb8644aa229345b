// A lock client for the edge tests (paused and dead waiters, paused holders), on many keys
// at once so that one SIGSTOP or SIGKILL makes one trial per key.
// MODE=wait  acquire every key of KEYS (comma-separated; WRITE=1: a write lease of a read/write lock); print "queued" once every acquire
//            has started, then "acquired <key> <token>" per key, and write under each lock
//            until told to stop (FENCE on the observer Redis, see test/mutex/edge.spec.ts).
// MODE=hold  acquire every key, write once under each, print "held <key> <token>", then wait
//            for "go" (BLPOP <PREFIX>go on the observer), schedule the next step and SIGSTOP
//            itself; once continued, that step writes under each lock whose signal is live and
//            prints "checked <key> aborted|live".
// Every writer checks `signal.aborted` before each write, as a protected write should.
// A heartbeat line "tick" every 10 ms shows the process runs.
import { Redis } from 'ioredis';
import { FencedResource } from '../harness/fenced-resource';
import { LockEngine } from '../../libs/lockwarden/src/core';
import type { LockHandle } from '../../libs/lockwarden/src/core';
import { workerMain } from './worker-main';

async function main(): Promise<void> {
  const {
    REDIS,
    OBSERVER,
    PREFIX = '',
    MODE,
    KEYS = '',
    LEASE_MS = '600',
    FAIR = '0',
    WRITE = '0',
    NAME = 'w',
  } = process.env;
  const keys = KEYS.split(',');
  const engine = new LockEngine({ redis: REDIS!, keyPrefix: PREFIX, leaseMs: Number(LEASE_MS), instanceId: NAME });
  const resource = new FencedResource(new Redis(OBSERVER!), PREFIX);
  setInterval(() => console.log('tick'), 10);
  if (MODE === 'wait') {
    const done = keys.map(async (key) => {
      const lock =
        WRITE === '1'
          ? await engine.acquireWrite(key, { waitMs: 60_000 })
          : await engine.acquire(key, { waitMs: 60_000, fair: FAIR === '1' });
      const token = await lock.fencingToken();
      console.log(`acquired ${key} ${token}`);
      await resource.write(key, token, NAME);
      await lock.release();
    });
    console.log('queued');
    await Promise.all(done);
    console.log('done');
  } else if (MODE === 'hold') {
    const locks = await Promise.all(keys.map((key) => engine.acquire(key)));
    // Read (minted) while held: the resumed step below must not wait for Redis before writing.
    const tokens = new Map<LockHandle, number>();
    for (const lock of locks) tokens.set(lock, await lock.fencingToken());
    for (const lock of locks) await resource.write(lock.key, tokens.get(lock)!, NAME);
    for (const lock of locks) console.log(`held ${lock.key} ${tokens.get(lock)}`);
    // When told, stop this very process (SIGSTOP) with the next step of the work already
    // due: on resume that timer runs before the watchdog's, which is due later.
    const trigger = new Redis(OBSERVER!);
    console.log('ready');
    await trigger.blpop(`${PREFIX}go`, 0);
    trigger.disconnect();
    setTimeout(() => {
      for (const lock of locks) {
        const aborted = lock.signal.aborted;
        if (!aborted) void resource.write(lock.key, tokens.get(lock)!, NAME);
        console.log(`checked ${lock.key} ${aborted ? 'aborted' : 'live'}`);
      }
    }, 1);
    console.log('stopping');
    process.kill(process.pid, 'SIGSTOP');
  }
}

workerMain(main);
