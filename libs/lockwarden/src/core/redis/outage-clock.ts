import type { ConnectionOutage } from '../backend/lock-backend';

/**
 * When a client's connection went down and why, read from its own state changes (ready, lost,
 * closed), which a client reports whoever else listens: so it serves a client the application
 * gave as well as one of Lockwarden's own. A client that was never ready is still connecting,
 * not down: its first connection has a budget of its own (acquire-loop.ts).
 */
export class OutageClock {
  private since: number | undefined;
  private error: Error | undefined;
  /** Closed: no later error says more. */
  private final = false;

  /** @param server what cannot be reached, for messages (the connection's `describe()`). */
  constructor(
    private readyOnce: boolean,
    private readonly server: () => string,
  ) {}

  /** Whether the connection was ready at least once: not ready since, it was lost, not still connecting. */
  get wasReady(): boolean {
    return this.readyOnce;
  }

  /** The connection is usable (again). */
  readonly up = (): void => {
    this.readyOnce = true;
    this.since = undefined;
    this.error = undefined;
    this.final = false;
  };

  /** The connection was lost, and the client reconnects; before it was first ready, it is still connecting. */
  readonly lost = (): void => {
    if (this.readyOnce) this.since ??= performance.now();
  };

  /** The client was closed (by its owner, or it gave up reconnecting): down until it is opened again. */
  readonly closed = (): void => {
    this.readyOnce = true;
    this.since ??= performance.now();
    // In the clients' own words, which errors/redis-reason.ts reads as a closed client.
    this.error = new Error('The client is closed');
    this.final = true;
  };

  /** A connection error the client reported: why it is down, if it goes down. */
  readonly failed = (err: Error): void => {
    if (!this.final) this.error = err;
  };

  /** The outage going on now, if any. */
  outage(): ConnectionOutage | undefined {
    if (this.since === undefined) return undefined;
    // Without an error listener of the application's, the client's own errors are not heard.
    return {
      since: this.since,
      error: this.error ?? new Error('connection lost; reconnecting'),
      server: this.server(),
    };
  }
}

/**
 * Whether the application listens to `client`'s errors itself. Only then may Lockwarden listen
 * too: a client with no listener reports its errors its own way (ioredis prints them, node-redis
 * throws them), and a listener of ours would silence that.
 */
export function errorsHeard(client: { listenerCount(event: string): number }): boolean {
  return client.listenerCount('error') > 0;
}
