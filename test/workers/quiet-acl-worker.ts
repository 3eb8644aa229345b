// Connects Lockwarden to REDIS (a rediss:// URL whose ACL user may not run INFO), with the
// test CA in its options, takes and releases a lock, and again after each "reconnect" line on
// stdin (the test cuts the connection in between): whatever the Redis client prints on its own
// at a connect shows on this process's stdout or stderr. Lockwarden's own log goes nowhere.
import { createInterface } from 'node:readline';
import { LockEngine } from '../../libs/lockwarden/src/core';
import { testTls } from '../harness/tls';
import { workerMain } from './worker-main';

async function main(): Promise<void> {
  const { REDIS, PREFIX, READY_CHECK } = process.env;
  if (!testTls) throw new Error('the worker runs over TLS only (LOCKWARDEN_TEST_TLS=1)');
  // The CA is trusted because the options below give it, not process-wide.
  if (process.env.NODE_EXTRA_CA_CERTS) throw new Error('the worker runs without NODE_EXTRA_CA_CERTS');
  const quiet = (): void => undefined;
  const engine = new LockEngine(
    {
      redis: {
        url: REDIS!,
        tls: { ca: testTls.ca },
        // The test's control: ioredis's own ready check, turned back on.
        ...(READY_CHECK === '1' ? { enableReadyCheck: true } : {}),
      },
      keyPrefix: PREFIX,
      metrics: false,
    },
    { log: quiet, warn: quiet, debug: quiet, error: quiet },
  );
  const lockOnce = async (): Promise<void> => {
    // Waits through a reconnection: the call is queued until the connection is ready again.
    const lock = await engine.acquire('quiet', { waitMs: 10_000 });
    await lock.release();
  };
  await lockOnce();
  console.log('locked');
  for await (const line of createInterface({ input: process.stdin })) {
    if (line !== 'reconnect') break;
    await lockOnce();
    console.log('locked');
  }
  await engine.close();
}

workerMain(main);
