import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for the prize office the lottery announces winners to, run by the demo and the
 * tests in their own process: it is the observer the lock library does not control. It counts
 * the calls in flight (the semaphore must keep them at or under its permits across all
 * instances) and applies each `Idempotency-Key` once.
 */
export class PrizeOfficeServer {
  inFlight = 0;
  peak = 0;
  calls = 0;
  /** Idempotency keys ("<drawId>:<user>") applied, with how many calls carried each. */
  readonly applied = new Map<string, number>();

  private constructor(
    private readonly server: Server,
    private readonly delayMs: number,
  ) {}

  /** Listens on a free loopback port; each call takes `delayMs`, like a real remote service. */
  static async start(delayMs = 25): Promise<PrizeOfficeServer> {
    const server = createServer();
    const office = new PrizeOfficeServer(server, delayMs);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => void office.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return office;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/announcements`;
  }

  /** The users announced for one draw. */
  announced(drawId: string): string[] {
    const prefix = `${drawId}:`;
    return [...this.applied.keys()].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length));
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.calls++;
    this.inFlight++;
    this.peak = Math.max(this.peak, this.inFlight);
    try {
      for await (const chunk of req) void chunk;
      await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      const key = req.headers['idempotency-key'];
      if (req.method !== 'POST' || typeof key !== 'string') {
        res.writeHead(400).end();
        return;
      }
      this.applied.set(key, (this.applied.get(key) ?? 0) + 1);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    } finally {
      // Counted out before the answer leaves, so the caller still holds its permit while counted in.
      this.inFlight--;
    }
  }
}
