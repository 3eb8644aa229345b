import { createServer, Socket } from 'node:net';
import type { Server } from 'node:net';

/** What the proxy does with traffic: pass it, delay it, hang it (no reset), or reset every connection. */
export type FaultMode = { kind: 'pass' } | { kind: 'delay'; ms: number } | { kind: 'blackhole' } | { kind: 'reset' };

interface Link {
  readonly client: Socket;
  readonly upstream: Socket;
}

/**
 * A loopback TCP proxy in front of one Redis, for fault tests. Clients that
 * connect through it can be cut off from that Redis without touching the
 * server or the other clients:
 * - `blackhole()` stops reading on both sides, so requests and replies sit in
 *   the kernel's buffers and nothing is reset: a partition. `pass()` heals
 *   it, and what was held back is then delivered, as TCP would after a heal.
 * - `reset()` resets every connection, and each new one, at once.
 * - `delay(ms)` delivers every chunk `ms` late, in order.
 */
export class FaultProxy {
  private mode: FaultMode = { kind: 'pass' };
  private readonly links = new Set<Link>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {
    server.on('connection', (client) => this.accept(client));
  }

  static async start(target: { host: string; port: number }): Promise<FaultProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('proxy has no TCP address');
    return new FaultProxy(server, address.port, target);
  }

  get host(): string {
    return '127.0.0.1';
  }

  get url(): string {
    return `redis://${this.host}:${this.port}`;
  }

  get connections(): number {
    return this.links.size;
  }

  pass(): void {
    this.mode = { kind: 'pass' };
    for (const link of this.links) {
      link.client.resume();
      link.upstream.resume();
    }
  }

  delay(ms: number): void {
    this.pass();
    this.mode = { kind: 'delay', ms };
  }

  blackhole(): void {
    this.mode = { kind: 'blackhole' };
    for (const link of this.links) {
      link.client.pause();
      link.upstream.pause();
    }
  }

  reset(): void {
    this.mode = { kind: 'reset' };
    for (const link of [...this.links]) this.drop(link);
  }

  async stop(): Promise<void> {
    for (const link of [...this.links]) this.drop(link);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    client.on('error', () => undefined);
    if (this.mode.kind === 'reset') {
      client.resetAndDestroy();
      return;
    }
    const upstream = new Socket();
    upstream.on('error', () => undefined);
    const link: Link = { client, upstream };
    this.links.add(link);
    if (this.mode.kind === 'blackhole') {
      client.pause();
      upstream.pause();
    }
    upstream.connect(this.target.port, this.target.host);
    this.forward(client, upstream);
    this.forward(upstream, client);
    const close = (): void => this.drop(link);
    client.once('close', close);
    upstream.once('close', close);
  }

  private forward(from: Socket, to: Socket): void {
    from.on('data', (chunk: Buffer) => {
      const mode = this.mode;
      if (mode.kind === 'delay') {
        setTimeout(() => to.destroyed || to.write(chunk), mode.ms);
      } else if (!to.destroyed) {
        to.write(chunk);
      }
    });
  }

  private drop(link: Link): void {
    if (!this.links.delete(link)) return;
    if (!link.client.destroyed) link.client.resetAndDestroy();
    if (!link.upstream.destroyed) link.upstream.destroy();
  }
}
