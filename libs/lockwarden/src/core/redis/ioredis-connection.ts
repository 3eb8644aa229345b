import calculateSlot from 'cluster-key-slot';
import type { Cluster, Redis } from 'ioredis';
import type {
  ConnectionState,
  RedisConnection,
  ScriptSource,
  ServerConnection,
  StreamEntry,
  SubscriberConnection,
} from './connection';
import { commandKnown, compareDeleteArgs, isNoScript } from './connection';
import type { CompareDelete } from './connection';
import type { ConnectionOutage } from '../backend/lock-backend';
import { errorsHeard, OutageClock } from './outage-clock';
import { scriptError, scriptFailure } from './script-error';
import { withDownReason } from './connection-watch';

type IoClient = Redis | Cluster;

/**
 * An ioredis client (Redis, through Sentinel too, or Cluster) as a RedisConnection. It
 * uses the instance's public methods only; ioredis itself is never imported here, so a
 * client the application made is served by the application's own copy.
 */
export class IoRedisConnection implements RedisConnection {
  readonly kind = 'ioredis';
  readonly cluster: boolean;
  private readonly clock: OutageClock;

  constructor(readonly client: IoClient) {
    this.cluster = client.isCluster;
    // Its state changes, which any number may listen to; its errors only beside the application's own listener.
    this.clock = new OutageClock(client.status === 'ready', () => this.describe());
    client.on('ready', this.clock.up);
    client.on('close', this.clock.lost);
    client.on('reconnecting', this.clock.lost);
    client.on('end', this.clock.closed);
    if (errorsHeard(client)) client.on('error', this.clock.failed);
  }

  async run(script: ScriptSource, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await this.client.evalsha(script.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!isNoScript(err)) throw scriptError(withDownReason(err, this), script, args);
      return this.client
        .eval(script.source, keys.length, ...keys, ...args)
        .catch(this.told)
        .catch(scriptFailure(script, args));
    }
  }

  async setNxPx(key: string, value: string, ms: number): Promise<boolean> {
    return (await this.client.set(key, value, 'PX', ms, 'NX').catch(this.told)) === 'OK';
  }

  async compareDelete(name: CompareDelete, key: string, value: string): Promise<boolean> {
    // On a Cluster, to the master of the key's slot; a slot that moved answers MOVED, and the
    // caller falls back to its script.
    const reply = await this.nodeFor(key)
      .call(name, ...compareDeleteArgs(name, key, value))
      .catch(this.told);
    return Number(reply) === 1;
  }

  get(key: string): Promise<string | null> {
    return this.client.get(key).catch(this.told);
  }

  hgetall(key: string): Promise<Record<string, string>> {
    return this.client.hgetall(key).catch(this.told);
  }

  exists(key: string): Promise<number> {
    return this.client.exists(key).catch(this.told);
  }

  xrange(key: string, start: string, end: string, count: number): Promise<StreamEntry[]> {
    return this.client.xrange(key, start, end, 'COUNT', count).catch(this.told);
  }

  xrevrange(key: string, end: string, start: string, count: number): Promise<StreamEntry[]> {
    return this.client.xrevrange(key, end, start, 'COUNT', count).catch(this.told);
  }

  async waitReplicas(key: string, replicas: number, timeoutMs: number): Promise<number> {
    return Number(await this.nodeFor(key).wait(replicas, timeoutMs).catch(this.told));
  }

  /** Rethrows a call's failure with why the connection is down, when it says only that it is. */
  private readonly told = (err: unknown): never => {
    throw withDownReason(err, this);
  };

  servers(): ServerConnection[] {
    const nodes = this.cluster ? (this.client as Cluster).nodes('master') : [this.client as Redis];
    return nodes.map((node) => new IoRedisServer(node));
  }

  state(): ConnectionState {
    return stateOf(this.client.status);
  }

  outage(): ConnectionOutage | undefined {
    return this.clock.outage();
  }

  on(event: 'ready' | 'error', listener: (err: Error) => void): void {
    this.client.on(event, listener);
  }

  off(event: 'ready' | 'error', listener: (err: Error) => void): void {
    this.client.off(event, listener);
  }

  describe(): string {
    if (this.cluster) return 'the Redis Cluster';
    const o = (this.client as Redis).options;
    if (o.sentinels && o.sentinels.length > 0) return `Redis "${o.name ?? ''}" (through Sentinel)`;
    if (o.path) return `Redis at ${o.path}`;
    return `Redis at ${o.host ?? 'localhost'}:${o.port ?? 6379}`;
  }

  /**
   * ioredis resubscribes a connection that came back with a SUBSCRIBE whose failure nothing
   * handles: when the connection closes right after it came back (an app shutting down while
   * Redis restarts), that rejection would end the process. So on one server its
   * resubscription is off and the subscriber does it, with the failure handled. A Cluster's
   * sharded subscriber group resubscribes by itself, handling its failures.
   */
  subscriber(): SubscriberConnection {
    const sub = this.cluster
      ? (this.client as Cluster).duplicate(undefined, { shardedSubscribers: true })
      : (this.client as Redis).duplicate({ disconnectTimeout: 0, autoResubscribe: false });
    return new IoRedisSubscriber(sub);
  }

  duplicate(): RedisConnection {
    const copy = this.cluster
      ? (this.client as Cluster).duplicate()
      : (this.client as Redis).duplicate({ disconnectTimeout: 0 });
    return new IoRedisConnection(copy);
  }

  close(): Promise<void> {
    return closeIoClient(this.client);
  }

  /** The connection that carries writes to `key`: the master serving its slot on a Cluster. */
  private nodeFor(key: string): IoClient {
    if (!this.cluster) return this.client;
    const cluster = this.client as Cluster;
    const address = cluster.slots[calculateSlot(key)]?.[0];
    const node = cluster.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === address);
    return node ?? cluster;
  }
}

class IoRedisServer implements ServerConnection {
  readonly address: string;

  constructor(private readonly node: Redis) {
    this.address = `${node.options.host ?? 'localhost'}:${node.options.port ?? 6379}`;
  }

  state(): ConnectionState {
    return stateOf(this.node.status);
  }

  ping(): Promise<unknown> {
    return this.node.ping();
  }

  scriptLoad(source: string): Promise<unknown> {
    return this.node.script('LOAD', source);
  }

  async scriptExists(shas: readonly string[]): Promise<number[]> {
    return ((await this.node.script('EXISTS', ...shas)) as unknown[]).map(Number);
  }

  scan(cursor: string, match: string, count: number): Promise<[string, string[]]> {
    return this.node.scan(cursor, 'MATCH', match, 'COUNT', count);
  }

  dbsize(): Promise<number> {
    return this.node.dbsize();
  }

  async commandsKnown(names: readonly string[]): Promise<boolean[]> {
    const reply = (await this.node.call('COMMAND', 'INFO', ...names)) as unknown[];
    return names.map((_, i) => commandKnown(reply[i]));
  }

  info(section: string): Promise<string> {
    return this.node.info(section);
  }
}

class IoRedisSubscriber implements SubscriberConnection {
  private readonly sharded: boolean;

  constructor(private readonly sub: IoClient) {
    this.sharded = sub.isCluster;
  }

  subscribe(channel: string): Promise<unknown> {
    return this.sharded ? this.sub.ssubscribe(channel) : this.sub.subscribe(channel);
  }

  unsubscribe(channel: string): Promise<unknown> {
    return this.sharded ? this.sub.sunsubscribe(channel) : this.sub.unsubscribe(channel);
  }

  listen(handlers: Parameters<SubscriberConnection['listen']>[0]): void {
    this.sub.on('error', handlers.error);
    this.sub.on(this.sharded ? 'smessage' : 'message', handlers.message);
    let first = true;
    this.sub.on('ready', () => {
      if (first) {
        first = false;
        return;
      }
      const channels = handlers.channels();
      const again =
        this.sharded || channels.length === 0
          ? Promise.resolve()
          : this.sub.subscribe(...channels).catch(() => undefined);
      void again.then(handlers.resubscribed);
    });
  }

  close(): Promise<void> {
    this.sub.removeAllListeners('ready');
    return closeIoClient(this.sub);
  }
}

function stateOf(status: string): ConnectionState {
  switch (status) {
    case 'ready':
      return 'ready';
    case 'end':
      return 'closed';
    case 'reconnecting':
    case 'close':
      return 'reconnecting';
    default:
      return 'connecting'; // wait, connecting, connect
  }
}

/**
 * Closes an ioredis client, politely (QUIT) when it is connected and at once otherwise, and
 * resolves only when its socket is gone, so nothing of ours keeps the process alive after
 * shutdown.
 */
async function closeIoClient(client: IoClient): Promise<void> {
  if (client.status === 'end') return;
  // Only a client with a socket emits 'end'; one between reconnects just drops its retry timer.
  const hasSocket = client.status === 'ready' || client.status === 'connect' || client.status === 'connecting';
  const ended = hasSocket ? new Promise<void>((resolve) => client.once('end', () => resolve())) : undefined;
  if (client.status === 'ready') {
    await client.quit().catch(() => client.disconnect());
  } else {
    client.disconnect();
  }
  await ended;
  // ioredis arms a destroy timer even for a socket already gone (disconnectTimeout, 0 for our
  // clients); let it fire so nothing of ours outlives close().
  if (!hasSocket) await new Promise<void>((resolve) => setTimeout(resolve, 0));
}
