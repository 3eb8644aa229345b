// Runs SECTIONS critical sections in each of FLOWS flows, on KEYS keys, and prints each one
// as a line "section <json>" for the history checker: key, fencing token, Redis server time
// just after acquiring and just before releasing, and whether the signal had aborted.
import { clockClient, closeTopology, lockTopology } from './connect';
import { LockEngine } from '../../libs/lockwarden/src/core';
import { LockLostError } from '../../libs/lockwarden/src/errors';
import { workerMain } from './worker-main';

async function main(): Promise<void> {
  const { PREFIX, KEYS = '4', FLOWS = '2', SECTIONS = '100' } = process.env;
  const engine = new LockEngine({ ...(await lockTopology()), keyPrefix: PREFIX, leaseMs: 5_000, waitMs: 60_000 });
  const clock = clockClient();
  console.log('connected'); // the lock client is made: a hang after this is in the sections
  const now = async (): Promise<number> => {
    const [s, us] = await clock.time();
    return Number(s) * 1e6 + Number(us);
  };
  const out: string[] = [];
  /** Leases lost under load: a starved process, or a hand-off's short lease not renewed in time. */
  let lost = 0;
  const flow = async (f: number): Promise<void> => {
    for (let i = 0; i < Number(SECTIONS);) {
      const key = `h${(i * 7 + f) % Number(KEYS)}`;
      let recorded = false;
      try {
        await engine.withLock(key, async (lock) => {
          const entry = await now();
          const exit = await now();
          const token = await lock.fencingToken();
          out.push(JSON.stringify({ key, token, entry, exit, aborted: lock.signal.aborted }));
          recorded = true;
        });
      } catch (err) {
        // A lost lease is the lock keeping its promise: its holder was told (its signal aborted
        // before the lease could end on the server), and the checker knows a told holder's
        // section by `aborted`. A section not recorded (its token unreadable once lost) runs again.
        if (!(err instanceof LockLostError)) throw err;
        lost++;
      }
      if (recorded) i++;
    }
  };
  await Promise.all(Array.from({ length: Number(FLOWS) }, (_, f) => flow(f)));
  console.log(`lost ${lost}`);
  process.stdout.write(out.map((line) => `section ${line}\n`).join(''));
  await engine.close();
  await closeTopology();
  clock.disconnect();
}

workerMain(main);
