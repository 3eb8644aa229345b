import type {
  ConnectionState,
  RedisConnection,
  ScriptSource,
  ServerConnection,
  StreamEntry,
  SubscriberConnection,
} from './connection';
import { compareDeleteArgs, hashReply, isNoScript, streamReply } from './connection';
import { CommandServer } from './command-server';
import type { CompareDelete } from './connection';

/** What Lockwarden listens with: 'error' gets the error; the others get nothing it reads. */
type Listener = (err: Error) => void;
type PubSubListener = (message: string, channel: string) => unknown;
/** What node-redis's `unsubscribe` takes: a listener of strings or Buffers. */
type AnyPubSubListener = (message: string | Buffer, channel: string | Buffer) => unknown;

/** The part of any node-redis client (`redis` 5 or 6) Lockwarden uses: public methods only. */
interface NodeRedisCommon {
  readonly isOpen: boolean;
  connect(): Promise<unknown>;
  close(): Promise<unknown>;
  destroy(): unknown;
  on(event: string, listener: Listener): unknown;
  off(event: string, listener: Listener): unknown;
}

/**
 * A node-redis client of one server: `createClient()`.
 *
 * @example
 * ```ts
 * const client = await createClient({ url: 'redis://10.0.0.5:6379' }).on('error', console.error).connect();
 * LockModule.forRoot({ client });
 * ```
 */
export interface NodeRedisClient extends NodeRedisCommon {
  readonly isReady: boolean;
  sendCommand(args: string[]): Promise<unknown>;
  duplicate(): object;
  subscribe(channel: string, listener: PubSubListener): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  readonly options?: { url?: string; socket?: { host?: string; port?: number; path?: string } };
}

/** A node-redis Cluster client: `createCluster()`. Its masters are read through its public `masters`. */
export interface NodeRedisCluster extends NodeRedisCommon {
  /** `redis` 6 says when its first discovery of the slots is done; 5 has no such field. */
  readonly isReady?: boolean;
  readonly masters: readonly { readonly address: string; readonly client?: { readonly isReady: boolean } }[];
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  nodeClient(node: never): Promise<{ sendCommand(args: readonly string[]): Promise<unknown> }>;
  duplicate(): object;
  sSubscribe(channel: string, listener: PubSubListener): Promise<unknown>;
  sUnsubscribe(channel: string): Promise<unknown>;
}

/**
 * A node-redis Sentinel client: `createSentinel()`. `redis` 5's has no `duplicate()`: its own
 * pub/sub connection then carries Lockwarden's subscriptions too.
 */
export interface NodeRedisSentinel extends NodeRedisCommon {
  readonly isReady: boolean;
  sendCommand(isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  use(fn: never): Promise<unknown>;
  duplicate?(): object;
  subscribe(channel: string, listener: PubSubListener): Promise<unknown>;
  unsubscribe(channel: string, listener?: AnyPubSubListener): Promise<unknown>;
}

export type AnyNodeRedis = NodeRedisClient | NodeRedisCluster | NodeRedisSentinel;

type Shape = 'client' | 'cluster' | 'sentinel';

function shapeOf(client: AnyNodeRedis): Shape {
  if ('masters' in client) return 'cluster';
  if (typeof (client as { use?: unknown }).use === 'function') return 'sentinel';
  return 'client';
}

/**
 * A node-redis client (single server, Cluster or Sentinel) as a RedisConnection. Commands go
 * through the client's public `sendCommand`, so node-redis's own pipelining (the commands of
 * one turn written together) batches them. node-redis resubscribes a subscriber that came back
 * before it says it is ready, and queues commands while it reconnects (unless the
 * application turned its offline queue off).
 */
export class NodeRedisConnection implements RedisConnection {
  readonly kind = 'node-redis';
  readonly cluster: boolean;
  private readonly shape: Shape;
  private readonly send: (firstKey: string | undefined, args: string[]) => Promise<unknown>;
  /** The event that says the client is (again) usable: a Cluster says it per node. */
  private readonly readyEvent: string;

  constructor(readonly client: AnyNodeRedis) {
    this.shape = shapeOf(client);
    this.cluster = this.shape === 'cluster';
    this.readyEvent = this.cluster ? 'node-ready' : 'ready';
    if (this.shape === 'cluster') {
      const c = client as NodeRedisCluster;
      // A Cluster refuses commands until it has discovered its slots; one given while still
      // connecting (connect() not awaited) has them wait for that instead.
      this.send = (key, args) =>
        c.isReady === false && c.isOpen
          ? this.discovered().then(() => c.sendCommand(key, false, args))
          : c.sendCommand(key, false, args);
    } else if (this.shape === 'sentinel') {
      const s = client as NodeRedisSentinel;
      // `redis` 5's Sentinel, once closed, fails a command with a TypeError of its own: say what it is.
      this.send = (_key, args) => (s.isOpen ? s.sendCommand(false, args) : Promise.reject(new ClosedClientError()));
    } else {
      const c = client as NodeRedisClient;
      this.send = (_key, args) => c.sendCommand(args);
    }
  }

  async run(script: ScriptSource, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await this.send(keys[0], scriptArgs('EVALSHA', script.sha, keys, args));
    } catch (err) {
      if (!isNoScript(err)) throw err;
      return this.send(keys[0], scriptArgs('EVAL', script.source, keys, args));
    }
  }

  async setNxPx(key: string, value: string, ms: number): Promise<boolean> {
    return (await this.send(key, ['SET', key, value, 'PX', String(ms), 'NX'])) === 'OK';
  }

  async compareDelete(name: CompareDelete, key: string, value: string): Promise<boolean> {
    return Number(await this.send(key, [name, ...compareDeleteArgs(name, key, value)])) === 1;
  }

  async get(key: string): Promise<string | null> {
    const reply = await this.send(key, ['GET', key]);
    return reply === null || reply === undefined ? null : String(reply);
  }

  async hgetall(key: string): Promise<Record<string, string>> {
    return hashReply(await this.send(key, ['HGETALL', key]));
  }

  async exists(key: string): Promise<number> {
    return Number(await this.send(key, ['EXISTS', key]));
  }

  async xrange(key: string, start: string, end: string, count: number): Promise<StreamEntry[]> {
    return streamReply(await this.send(key, ['XRANGE', key, start, end, 'COUNT', String(count)]));
  }

  async xrevrange(key: string, end: string, start: string, count: number): Promise<StreamEntry[]> {
    return streamReply(await this.send(key, ['XREVRANGE', key, end, start, 'COUNT', String(count)]));
  }

  async waitReplicas(key: string, replicas: number, timeoutMs: number): Promise<number> {
    // One connection per node: on a Cluster the key routes WAIT to the node that took the write.
    return Number(await this.send(key, ['WAIT', String(replicas), String(timeoutMs)]));
  }

  servers(): ServerConnection[] {
    if (this.shape !== 'cluster') {
      return [
        new CommandServer(
          this.describe(),
          () => this.state(),
          (args) => this.send(undefined, args),
        ),
      ];
    }
    const cluster = this.client as NodeRedisCluster;
    return cluster.masters.map(
      (master) =>
        new CommandServer(
          master.address,
          () => (master.client?.isReady ? 'ready' : 'connecting'),
          async (args) => (await cluster.nodeClient(master as never)).sendCommand(args),
        ),
    );
  }

  state(): ConnectionState {
    if (!this.client.isOpen) return 'closed';
    if (this.shape === 'cluster') return (this.client as NodeRedisCluster).isReady === false ? 'connecting' : 'ready';
    return (this.client as NodeRedisClient | NodeRedisSentinel).isReady ? 'ready' : 'reconnecting';
  }

  on(event: 'ready' | 'error', listener: (err: Error) => void): void {
    this.client.on(event === 'ready' ? this.readyEvent : event, listener);
  }

  off(event: 'ready' | 'error', listener: (err: Error) => void): void {
    this.client.off(event === 'ready' ? this.readyEvent : event, listener);
  }

  describe(): string {
    if (this.shape === 'cluster') return 'the Redis Cluster';
    if (this.shape === 'sentinel') return 'Redis (through Sentinel)';
    const socket = (this.client as NodeRedisClient).options?.socket;
    if (socket?.path) return `Redis at ${socket.path}`;
    if (socket?.host || socket?.port) return `Redis at ${socket.host ?? 'localhost'}:${socket.port ?? 6379}`;
    const url = (this.client as NodeRedisClient).options?.url;
    return url ? `Redis at ${url.replace(/\/\/[^@/]*@/, '//')}` : 'Redis';
  }

  private discovery: Promise<void> | undefined;

  /** Settles once a connecting Cluster is ready, or has given up (its command then fails). */
  private discovered(): Promise<void> {
    this.discovery ??= new Promise<void>((resolve) => {
      const done = (): void => {
        this.client.off('connect', done);
        this.client.off('error', done);
        this.discovery = undefined;
        resolve();
      };
      this.client.on('connect', done);
      this.client.on('error', done);
    });
    return this.discovery;
  }

  subscriber(): SubscriberConnection {
    if (!this.client.duplicate) return new SentinelOwnSubscriber(this.client as NodeRedisSentinel);
    // A duplicate is a client of the same kind, with the same options.
    const sub = this.client.duplicate() as NodeRedisClient | NodeRedisCluster | NodeRedisSentinel;
    return new NodeRedisSubscriber(sub, this.shape === 'cluster');
  }

  duplicate(): RedisConnection | undefined {
    if (!this.client.duplicate) return undefined;
    const copy = this.client.duplicate() as AnyNodeRedis;
    // node-redis throws an 'error' event nobody listens to: a failed connect must not end the process.
    copy.on('error', noop);
    void copy.connect().catch(noop);
    return new NodeRedisConnection(copy);
  }

  async close(): Promise<void> {
    await closeNodeClient(this.client);
  }
}

/** Closes a node-redis client Lockwarden opened; one still connecting (Redis down) is dropped at once. */
async function closeNodeClient(client: AnyNodeRedis): Promise<void> {
  if (!client.isOpen) return;
  if ((client as { isReady?: boolean }).isReady === false) await client.destroy();
  else await client.close().catch(() => client.destroy());
}

function noop(): void {}

/** node-redis's own words for a command on a closed client. */
class ClosedClientError extends Error {
  constructor() {
    super('The client is closed');
    this.name = 'ClientClosedError';
  }
}

function scriptArgs(
  command: string,
  script: string,
  keys: readonly string[],
  args: readonly (string | number)[],
): string[] {
  const out = [command, script, String(keys.length), ...keys];
  for (const arg of args) out.push(String(arg));
  return out;
}

/** node-redis wants one listener per channel; ours hands every message to one handler. */
class NodeRedisSubscriber implements SubscriberConnection {
  private connected: Promise<unknown> | undefined;
  private handlers: Parameters<SubscriberConnection['listen']>[0] | undefined;
  private readonly onMessage: PubSubListener = (message, channel) => this.handlers?.message(channel, message);

  constructor(
    private readonly sub: NodeRedisClient | NodeRedisCluster | NodeRedisSentinel,
    private readonly sharded: boolean,
  ) {}

  async subscribe(channel: string): Promise<unknown> {
    await this.connection();
    return this.sharded
      ? (this.sub as NodeRedisCluster).sSubscribe(channel, this.onMessage)
      : (this.sub as NodeRedisClient).subscribe(channel, this.onMessage);
  }

  async unsubscribe(channel: string): Promise<unknown> {
    if (!this.sub.isOpen) return undefined;
    return this.sharded
      ? (this.sub as NodeRedisCluster).sUnsubscribe(channel)
      : (this.sub as NodeRedisClient).unsubscribe(channel);
  }

  listen(handlers: Parameters<SubscriberConnection['listen']>[0]): void {
    this.handlers = handlers;
    this.sub.on('error', handlers.error);
    let first = true;
    // node-redis subscribes again before it says ready (per node on a Cluster).
    this.sub.on(this.sharded ? 'node-ready' : 'ready', () => {
      if (first && !this.sharded) {
        first = false;
        return;
      }
      handlers.resubscribed();
    });
  }

  close(): Promise<void> {
    return closeNodeClient(this.sub);
  }

  private connection(): Promise<unknown> {
    this.connected ??= this.sub.connect();
    return this.connected;
  }
}

/**
 * Subscriptions on a `redis` 5 Sentinel client's own pub/sub connection (that client cannot be
 * duplicated). Only Lockwarden's listener is removed from a channel, and the client is never
 * closed. It resubscribes by itself without saying when, so `resubscribed` is never called:
 * a waiter that missed a wake-up while the connection was down retries when the lease it
 * waits on ends.
 */
class SentinelOwnSubscriber implements SubscriberConnection {
  private handlers: Parameters<SubscriberConnection['listen']>[0] | undefined;
  private readonly channels = new Set<string>();
  private readonly onMessage: AnyPubSubListener = (message, channel) =>
    this.handlers?.message(String(channel), String(message));

  constructor(private readonly sentinel: NodeRedisSentinel) {}

  subscribe(channel: string): Promise<unknown> {
    this.channels.add(channel);
    return this.sentinel.subscribe(channel, this.onMessage);
  }

  async unsubscribe(channel: string): Promise<unknown> {
    this.channels.delete(channel);
    if (!this.sentinel.isOpen) return undefined;
    return this.sentinel.unsubscribe(channel, this.onMessage);
  }

  listen(handlers: Parameters<SubscriberConnection['listen']>[0]): void {
    // The application listens to its client's errors; a listener of ours would hide them.
    this.handlers = handlers;
  }

  async close(): Promise<void> {
    const channels = [...this.channels];
    this.channels.clear();
    if (!this.sentinel.isOpen) return;
    await Promise.all(channels.map((c) => this.sentinel.unsubscribe(c, this.onMessage).catch(() => undefined)));
  }
}
