import { createServer } from 'node:net';

/** A loopback port the OS says is free right now; never Redis's default 6379. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    if (port !== 6379 && port !== 0) return port;
  }
}
