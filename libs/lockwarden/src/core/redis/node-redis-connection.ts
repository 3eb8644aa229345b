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
import { scriptError, scriptFailure } from './script-error';
import type { CompareDelete } from './connection';
import type { AnyNodeRedis, NodeRedisClient, NodeRedisCluster, NodeRedisSentinel } from './node-redis-types';
import { closeNodeClient, NodeRedisSubscriber, noop, SentinelOwnSubscriber } from './node-redis-subscriber';
import type { ConnectionOutage } from '../backend/lock-backend';
import { errorsHeard, OutageClock } from './outage-clock';

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
  /**
   * A one-server client's outages, from its state changes. node-redis says "not ready" alike
   * while it first connects and once it lost its connection: this tells the two apart. A
   * Cluster or Sentinel client reports its nodes one by one, and has none.
   */
  private readonly clock: OutageClock | undefined;

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
      this.clock = new OutageClock(c.isReady, () => this.describe());
      c.on('ready', this.clock.up);
      c.on('reconnecting', this.clock.lost);
      c.on('end', this.clock.closed);
      // Beside the application's listener only: without one, node-redis throws its errors, as it should.
      if (errorsHeard(c)) c.on('error', this.clock.failed);
    }
  }

  async run(script: ScriptSource, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await this.send(keys[0], scriptArgs('EVALSHA', script.sha, keys, args));
    } catch (err) {
      if (!isNoScript(err)) throw scriptError(err, script, args);
      return this.send(keys[0], scriptArgs('EVAL', script.source, keys, args)).catch(scriptFailure(script, args));
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
    if ((this.client as NodeRedisClient | NodeRedisSentinel).isReady) return 'ready';
    // Open and not ready: a one-server client that was never ready is still connecting.
    return this.clock && !this.clock.wasReady ? 'connecting' : 'reconnecting';
  }

  outage(): ConnectionOutage | undefined {
    return this.clock?.outage();
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
