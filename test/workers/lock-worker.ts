// A lock client in its own process, for the multi-process tests.
// MODE=counter  ROUNDS times: read a plain Redis counter, then write it back +1, under the lock.
// MODE=fence    ROUNDS times: take the lock and print its fencing token.
// MODE=hold     take the lock, print "held <token>", and keep it until killed.
// MODE=read-hold  the same with a read lease of a read/write lock.
// MODE=wait-hold  wait for the lock (KIND=read or write: that hold of a read/write lock), print
//                 "acquired <token> <handed off?>", release it once "<PREFIX>go:<NAME>" is
//                 pushed, then print "released".
// PLACE_MS sets the engine's placeMs.
import type { Cluster, Redis } from 'ioredis';
import { dataClient, lockRedis } from './connect';
import { LockEngine } from '../../libs/lockwarden/src/core';
import { workerMain } from './worker-main';

async function main(): Promise<void> {
  const { PREFIX, KEY = 'k', MODE, KIND, ROUNDS = '0', LEASE_MS = '30000', PLACE_MS, NAME = '' } = process.env;
  let handedOff = false;
  const engine = new LockEngine({
    redis: lockRedis(),
    keyPrefix: PREFIX,
    leaseMs: Number(LEASE_MS),
    waitMs: 60_000,
    ...(PLACE_MS ? { placeMs: Number(PLACE_MS) } : {}),
    onEvent: (e) => {
      if (e.type === 'acquired') handedOff = e.handedOff === true;
    },
  });
  const data = dataClient();
  await barrier(data, `${PREFIX}barrier`, Number(process.env.PARTIES ?? '1'));
  if (MODE === 'counter') {
    for (let i = 0; i < Number(ROUNDS); i++) {
      await engine.withLock(KEY, async () => {
        const value = Number((await data.get(`${PREFIX}counter`)) ?? '0');
        await data.set(`${PREFIX}counter`, String(value + 1));
      });
    }
  } else if (MODE === 'fence') {
    for (let i = 0; i < Number(ROUNDS); i++) {
      const token = await engine.withLock(KEY, (lock) => lock.fencingToken());
      console.log(`token ${token}`);
    }
  } else if (MODE === 'read-hold') {
    const lock = await engine.acquireRead(KEY);
    console.log(`held ${await lock.fencingToken()}`);
    await new Promise(() => undefined);
  } else if (MODE === 'wait-hold') {
    console.log('waiting');
    const lock = await (KIND === 'read'
      ? engine.acquireRead(KEY)
      : KIND === 'write'
        ? engine.acquireWrite(KEY)
        : engine.acquire(KEY));
    console.log(`acquired ${await lock.fencingToken()} ${handedOff}`);
    const go = dataClient();
    await go.blpop(`${PREFIX}go:${NAME}`, 0);
    go.disconnect();
    await lock.release();
    console.log('released');
  } else if (MODE === 'hold') {
    const lock = await engine.acquire(KEY);
    console.log(`held ${await lock.fencingToken()}`);
    await new Promise(() => undefined);
  }
  console.log('done');
  await data.quit();
  await engine.close();
}

/** Waits until `parties` workers have arrived, so they really contend instead of running one after another. */
async function barrier(data: Redis | Cluster, key: string, parties: number): Promise<void> {
  if (parties <= 1) return;
  if ((await data.incr(`${key}:count`)) === parties) {
    await data.rpush(`${key}:go`, ...Array.from({ length: parties }, () => 'go'));
  }
  const waiter = dataClient();
  await waiter.blpop(`${key}:go`, 0);
  waiter.disconnect();
}

workerMain(main);
