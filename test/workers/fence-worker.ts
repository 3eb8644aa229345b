// A holder that reads its fencing token only when told to, for the lazy-minting tests.
// Takes KEY, prints "held", then waits for an item on the list <PREFIX>go and reads its token:
// prints "token <n>", or "rejected <error name>".
import { dataClient, lockRedis } from './connect';
import { LockEngine } from '../../libs/lockwarden/src/core';
import { workerMain } from './worker-main';

async function main(): Promise<void> {
  const { PREFIX = '', KEY = 'k', LEASE_MS = '30000' } = process.env;
  const engine = new LockEngine({ redis: lockRedis(), keyPrefix: PREFIX, leaseMs: Number(LEASE_MS) });
  const data = dataClient();
  const lock = await engine.acquire(KEY);
  console.log('held');
  await data.blpop(`${PREFIX}go`, 0);
  try {
    console.log(`token ${await lock.fencingToken()}`);
  } catch (err) {
    console.log(`rejected ${err instanceof Error ? err.name : String(err)}`);
  }
  data.disconnect();
  await engine.close();
}

workerMain(main);
