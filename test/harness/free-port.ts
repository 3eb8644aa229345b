import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Ports are handed out below the kernel's ephemeral range (Linux: 32768-60999), from a block
 * of 270 that one process claims for itself, one after another. A port the OS picks for
 * `listen(0)` or for an outgoing connection is never one of these, and no two processes
 * share a block: not two Jest workers, and not two test runs on one machine. So a port stays
 * ours while its server is down: a Redis restarted on its old port, or a port a test keeps
 * free to find nothing there, is not taken meanwhile by another test's server (a free port
 * from `listen(0)` could be, and once was; a block chosen by Jest worker number alone was
 * shared by two runs at once).
 */
const FIRST_PORT = 20_000;
const BLOCK = 270;
// 20000-22699: a cluster node's bus port (its port + 10 000, so 30000-32699) then never falls
// in a block, nor in the ephemeral range, where an outgoing connection's local port could
// already hold it (a node once exited at start for that).
const BLOCKS = 10;
const CLAIMS = join(tmpdir(), 'lockwarden-test-ports');

let block: number | undefined;
// Within the block, a process starts at an offset of its own.
let next = (process.pid * 7) % BLOCK;

/** Whether `pid` is a live process. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Claims a block for this process: a directory per block, made atomically, naming its owner;
 * a claim whose owner has died is taken over. With every block claimed it shares the one its
 * worker number names, as before (the port check below still skips what is in use).
 */
function claimBlock(): number {
  mkdirSync(CLAIMS, { recursive: true });
  const first = Number(process.env.JEST_WORKER_ID ?? '0') % BLOCKS;
  for (let i = 0; i < BLOCKS; i++) {
    const candidate = (first + i) % BLOCKS;
    const dir = join(CLAIMS, String(candidate));
    try {
      mkdirSync(dir);
    } catch {
      let owner = 0;
      try {
        owner = Number(readFileSync(join(dir, 'pid'), 'utf8'));
      } catch {
        // Made but not yet named by its owner: taken.
        continue;
      }
      if (owner === process.pid) return candidate;
      if (alive(owner)) continue;
      rmSync(dir, { recursive: true, force: true });
      try {
        mkdirSync(dir);
      } catch {
        continue; // another process took it over first
      }
    }
    writeFileSync(join(dir, 'pid'), String(process.pid));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    return candidate;
  }
  return first;
}

/** Whether nothing listens on `port` on loopback right now. */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A loopback port free right now, outside the ephemeral range and never Redis's default 6379. */
export async function freePort(): Promise<number> {
  block ??= claimBlock();
  for (let tried = 0; tried < BLOCK; tried++) {
    const port = FIRST_PORT + block * BLOCK + (next++ % BLOCK);
    if (await isFree(port)) return port;
  }
  throw new Error(`no free port in ${FIRST_PORT + block * BLOCK}-${FIRST_PORT + (block + 1) * BLOCK - 1}`);
}
