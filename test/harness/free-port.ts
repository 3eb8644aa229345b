import { createServer } from 'node:net';

/**
 * Ports are handed out below the kernel's ephemeral range (Linux: 32768-60999), from a block
 * of 1 000 per Jest worker, one after another. A port the OS picks for `listen(0)` or for an
 * outgoing connection is never one of these, and no two test files running at once share a
 * block. So a port stays ours while its server is down: a Redis restarted on its old port,
 * or a port a test keeps free to find nothing there, is not taken meanwhile by another
 * test's server (a free port from `listen(0)` could be, and once was).
 */
const FIRST_PORT = 20_000;
const BLOCK = 1_000;
// 20000-29999: a cluster node's bus port (its port + 10 000) then never falls in a block.
const BLOCKS = 10;

const worker = Number(process.env.JEST_WORKER_ID ?? '0') % BLOCKS;
// A process of its own (a worker script, global set-up) starts elsewhere in its block.
let next = (process.pid * 7) % BLOCK;

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
  for (let tried = 0; tried < BLOCK; tried++) {
    const port = FIRST_PORT + worker * BLOCK + (next++ % BLOCK);
    if (await isFree(port)) return port;
  }
  throw new Error(`no free port in ${FIRST_PORT + worker * BLOCK}-${FIRST_PORT + (worker + 1) * BLOCK - 1}`);
}
