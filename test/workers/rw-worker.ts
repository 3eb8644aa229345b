// Read/write lock clients in their own process, for the randomized invariant test.
// FLOWS concurrent flows each do OPS random reads (70%) and writes (30%) on one key,
// pushing "enter"/"leave" events to a Redis list while they hold the lock, so the
// list's order is the true order of holders. At the end it prints "done <operations>" and
// "handed <n>": how many of its holds a release handed to it (the queue's hand-off).
import { dataClient, lockRedis } from './connect';
import { LockEngine } from '../../libs/lockwarden/src/core';
import { workerMain } from './worker-main';

async function main(): Promise<void> {
  const { PREFIX, KEY = 'rw', FLOWS = '3', OPS = '100', LOG = 'log', NAME = String(process.pid) } = process.env;
  let handed = 0;
  const engine = new LockEngine({
    redis: lockRedis(),
    keyPrefix: PREFIX,
    leaseMs: 5_000,
    waitMs: 60_000,
    onEvent: (e) => {
      if (e.type === 'acquired' && e.handedOff) handed++;
    },
  });
  const log = dataClient();
  const logKey = `${PREFIX}${LOG}`;
  const flow = async (f: number): Promise<void> => {
    for (let i = 0; i < Number(OPS); i++) {
      const write = Math.random() < 0.3;
      const body = async (): Promise<void> => {
        await log.rpush(logKey, `${NAME}.${f} enter ${write ? 'w' : 'r'}`);
        await log.ping();
        await log.rpush(logKey, `${NAME}.${f} leave ${write ? 'w' : 'r'}`);
      };
      if (write) await engine.withWriteLock(KEY, body);
      else await engine.withReadLock(KEY, body);
    }
  };
  await Promise.all(Array.from({ length: Number(FLOWS) }, (_, f) => flow(f)));
  console.log(`done ${Number(FLOWS) * Number(OPS)}`);
  console.log(`handed ${handed}`);
  await log.quit();
  await engine.close();
}

workerMain(main);
