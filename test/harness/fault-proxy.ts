import { createServer, Socket } from 'node:net';
import type { Server } from 'node:net';

/**
 * What the proxy does with traffic: pass it, delay it (every connection's, or only that of the
 * connections that subscribed), hang it (no reset), or reset every connection.
 */
export type FaultMode =
  | { kind: 'pass' }
  | { kind: 'delay'; ms: number; subscribersOnly: boolean }
  | { kind: 'blackhole' }
  | { kind: 'reset' };

interface Link {
  readonly client: Socket;
  readonly upstream: Socket;
  /** The client sent SUBSCRIBE or SSUBSCRIBE on it: a subscriber connection. */
  subscriber: boolean;
  /** Delivers at once, in order, whatever either direction still holds back. */
  readonly flush: (() => void)[];
}

/** A RESP command named SUBSCRIBE or SSUBSCRIBE, as either client spells it. */
const SUBSCRIBE = /\*\d+\r\n\$\d+\r\ns?subscribe\r\n/i;

/**
 * A loopback TCP proxy in front of one Redis, for fault tests. Clients that
 * connect through it can be cut off from that Redis without touching the
 * server or the other clients:
 * - `blackhole()` stops reading on both sides, so requests and replies sit in
 *   the kernel's buffers and nothing is reset: a partition. `pass()` heals
 *   it, and what was held back is then delivered, as TCP would after a heal.
 * - `reset()` resets every connection, and each new one, at once.
 * - `delay(ms)` delivers every chunk `ms` late, in order.
 * - `delaySubscribers(ms)` does so only on the connections that subscribed (their SUBSCRIBE
 *   included), so the commands of the same clients pass at once.
 *
 * `subscribesSeen` counts the subscribe commands the clients sent, and `subscribesDelivered`
 * those that reached Redis, each with a promise for the next (`nextSubscribe*`).
 */
export class FaultProxy {
  private mode: FaultMode = { kind: 'pass' };
  private readonly links = new Set<Link>();
  private seen = 0;
  private delivered = 0;
  private readonly watchers: { of: 'seen' | 'delivered'; count: number; resolve: () => void }[] = [];

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
      for (const flush of link.flush) flush();
      link.client.resume();
      link.upstream.resume();
    }
  }

  delay(ms: number): void {
    this.pass();
    this.mode = { kind: 'delay', ms, subscribersOnly: false };
  }

  /**
   * Delays only the connections that subscribed, from their SUBSCRIBE on, `ms` each way;
   * `Infinity` holds their traffic back until `pass()`.
   */
  delaySubscribers(ms: number): void {
    this.pass();
    this.mode = { kind: 'delay', ms, subscribersOnly: true };
  }

  /** How many subscribe commands the clients sent through the proxy, and how many reached Redis. */
  get subscribesSeen(): number {
    return this.seen;
  }

  get subscribesDelivered(): number {
    return this.delivered;
  }

  /** Resolves once the clients have sent `count` subscribe commands in all (the next one by default). */
  nextSubscribeSeen(count = this.seen + 1): Promise<void> {
    return this.watch('seen', count);
  }

  /** Resolves once `count` subscribe commands in all have reached Redis (the next one by default). */
  nextSubscribeDelivered(count = this.delivered + 1): Promise<void> {
    return this.watch('delivered', count);
  }

  private watch(of: 'seen' | 'delivered', count: number): Promise<void> {
    if ((of === 'seen' ? this.seen : this.delivered) >= count) return Promise.resolve();
    return new Promise((resolve) => this.watchers.push({ of, count, resolve }));
  }

  private count(of: 'seen' | 'delivered'): void {
    const n = of === 'seen' ? ++this.seen : ++this.delivered;
    for (let i = this.watchers.length - 1; i >= 0; i--) {
      const w = this.watchers[i];
      if (w.of === of && n >= w.count) {
        this.watchers.splice(i, 1);
        w.resolve();
      }
    }
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
    const link: Link = { client, upstream, subscriber: false, flush: [] };
    this.links.add(link);
    if (this.mode.kind === 'blackhole') {
      client.pause();
      upstream.pause();
    }
    upstream.connect(this.target.port, this.target.host);
    this.forward(link, client, upstream, true);
    this.forward(link, upstream, client, false);
    const close = (): void => this.drop(link);
    client.once('close', close);
    upstream.once('close', close);
  }

  /**
   * Passes `from`'s chunks to `to`, each when the mode says, and always in order: a chunk never
   * overtakes one held back before it, even when the mode changes in between.
   */
  private forward(link: Link, from: Socket, to: Socket, toRedis: boolean): void {
    // Chunks held back, oldest first, each with when it is due; one timer drains them.
    const held: { at: number; chunk: Buffer; subscribes: number }[] = [];
    let timer: NodeJS.Timeout | undefined;
    const deliver = (chunk: Buffer, subscribes: number): void => {
      if (to.destroyed) return;
      to.write(chunk);
      for (let i = 0; i < subscribes; i++) this.count('delivered');
    };
    const drain = (): void => {
      timer = undefined;
      const now = performance.now();
      while (held.length > 0 && held[0].at <= now) {
        const next = held.shift()!;
        deliver(next.chunk, next.subscribes);
      }
      if (held.length > 0 && Number.isFinite(held[0].at)) timer = setTimeout(drain, Math.max(1, held[0].at - now));
    };
    link.flush.push(() => {
      for (const h of held) h.at = 0;
      clearTimeout(timer);
      drain();
    });
    from.on('data', (chunk: Buffer) => {
      const mode = this.mode;
      const subscribes = toRedis ? countSubscribes(chunk) : 0;
      if (subscribes > 0) link.subscriber = true;
      for (let i = 0; i < subscribes; i++) this.count('seen');
      const delayed = mode.kind === 'delay' && (!mode.subscribersOnly || link.subscriber);
      if (!delayed && held.length === 0) {
        deliver(chunk, subscribes);
        return;
      }
      const now = performance.now();
      held.push({ at: Math.max(delayed ? now + mode.ms : now, held.at(-1)?.at ?? 0), chunk, subscribes });
      if (!timer && Number.isFinite(held[0].at)) timer = setTimeout(drain, Math.max(1, held[0].at - now));
    });
  }

  private drop(link: Link): void {
    if (!this.links.delete(link)) return;
    if (!link.client.destroyed) link.client.resetAndDestroy();
    if (!link.upstream.destroyed) link.upstream.destroy();
  }
}

function countSubscribes(chunk: Buffer): number {
  const text = chunk.toString('latin1');
  let n = 0;
  const all = new RegExp(SUBSCRIBE.source, 'gi');
  while (all.exec(text)) n++;
  return n;
}
