import type {
  CompareDelete,
  ConnectionState,
  RedisConnection,
  ScriptSource,
  ServerConnection,
  StreamEntry,
  SubscriberConnection,
} from './connection';
import { compareDeleteArgs, hashReply, streamReply } from './connection';
import { CommandServer } from './command-server';
import { scriptError, scriptFailure } from './script-error';
import { GlideClusterServers } from './glide-cluster-servers';
import type { GlidePrimary } from './glide-cluster-servers';
import { GlideSubscriber } from './glide-pubsub';
import type { ConnectionOutage } from '../backend/lock-backend';
import { GlideOutage } from './glide-outage';

/**
 * What Lockwarden uses of a Valkey GLIDE client on one server (`@valkey/valkey-glide` 2.x,
 * `GlideClient`), described by shape so that GLIDE is never loaded unless the application
 * gives one. Every command goes through `customCommand`; pub/sub through `subscribe` and
 * `getPubSubMessage` (GLIDE speaks RESP3, so a subscribed client still runs commands).
 *
 * @example
 * ```ts
 * import { GlideClient } from '@valkey/valkey-glide';
 * // One client per engine: Lockwarden reads its pub/sub messages.
 * const client = await GlideClient.createClient({ addresses: [{ host: 'valkey', port: 6379 }] });
 * LockModule.forRoot({ client });
 * ```
 */
export interface GlideClientLike {
  customCommand(args: string[]): Promise<unknown>;
  subscribe(channels: Iterable<string>, timeoutMs: number): Promise<void>;
  unsubscribe(channels: Iterable<string> | null, timeoutMs: number): Promise<void>;
  getPubSubMessage(): Promise<{ channel: unknown; message: unknown }>;
  close(errorMessage?: string): void;
}

/** Where a GLIDE cluster client sends one command: the primary of a key's slot, one address, or any node. */
export type GlideRoute =
  'randomNode' | { type: 'primarySlotKey'; key: string } | { type: 'routeByAddress'; host: string; port: number };

/**
 * What Lockwarden uses of a Valkey GLIDE cluster client (`GlideClusterClient`): commands
 * through `customCommand`, each routed to the primary of its key's slot, and sharded pub/sub
 * (`ssubscribe`), which GLIDE follows across resharding by itself.
 *
 * @example
 * ```ts
 * import { GlideClusterClient } from '@valkey/valkey-glide';
 * const client = await GlideClusterClient.createClient({ addresses: [{ host: 'valkey-1', port: 6379 }] });
 * LockModule.forRoot({ client });
 * ```
 */
export interface GlideClusterClientLike {
  customCommand(args: string[], options?: { route?: GlideRoute }): Promise<unknown>;
  ssubscribe(channels: Iterable<string>, timeoutMs: number): Promise<void>;
  sunsubscribe(channels: Iterable<string> | null, timeoutMs: number): Promise<void>;
  getPubSubMessage(): Promise<{ channel: unknown; message: unknown }>;
  close(errorMessage?: string): void;
}

/** Either GLIDE client. */
export type AnyGlideClient = GlideClientLike | GlideClusterClientLike;

/** GLIDE answers a map (RESP3) as a list of `{ key, value }` records: the flat list the other clients give. */
function flatten(reply: unknown): unknown {
  if (!Array.isArray(reply) || reply.length === 0) return reply;
  const first = reply[0] as { key?: unknown };
  if (typeof first !== 'object' || first === null || !('key' in first)) return reply;
  return (reply as { key: unknown; value: unknown }[]).flatMap((r) => [String(r.key), r.value]);
}

/** GLIDE's words for a script the server does not have cached. */
function isGlideNoScript(err: unknown): boolean {
  return err instanceof Error && /NOSCRIPT|NoScriptError/.test(err.message);
}

/** A GLIDE cluster client: it alone has sharded subscriptions. */
export function isGlideClusterClient(client: AnyGlideClient): client is GlideClusterClientLike {
  return typeof (client as { ssubscribe?: unknown }).ssubscribe === 'function';
}

/**
 * A Valkey GLIDE client as a RedisConnection, on one server or on a cluster. GLIDE has no
 * `duplicate()` and no connection events: Lockwarden subscribes on the given client itself,
 * so that client must not serve the application's own pub/sub, and there is no stand-in
 * connection for when the application closes it. On a cluster each command goes to the
 * primary of its key's slot (GLIDE follows MOVED and ASK), and the primaries are looked up
 * with `CLUSTER NODES` (GlideClusterServers).
 */
export class GlideConnection implements RedisConnection {
  readonly kind = 'glide';
  readonly cluster: boolean;
  private closed = false;
  private readonly primaries: GlideClusterServers | undefined;
  private readonly readyListeners = new Set<(err: Error) => void>();
  private readonly outages: GlideOutage;

  constructor(readonly client: AnyGlideClient) {
    this.cluster = isGlideClusterClient(client);
    this.outages = new GlideOutage(client, () => this.describe());
    this.primaries = this.cluster
      ? new GlideClusterServers(
          (args, to) => this.sendTo(args, to === 'any' ? 'randomNode' : addressRoute(to)),
          () => this.readyListeners.forEach((listener) => listener(new Error('ready'))),
        )
      : undefined;
  }

  /** One command, to the primary of `key`'s slot on a cluster. */
  private send(key: string, args: (string | number)[]): Promise<unknown> {
    return this.sendTo(args, { type: 'primarySlotKey', key });
  }

  private sendTo(args: (string | number)[], route: GlideRoute): Promise<unknown> {
    const strings = args.map(String);
    const c = this.client;
    return isGlideClusterClient(c) ? c.customCommand(strings, { route }) : c.customCommand(strings);
  }

  async run(script: ScriptSource, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await this.send(keys[0], ['EVALSHA', script.sha, keys.length, ...keys, ...args]);
    } catch (err) {
      if (!isGlideNoScript(err)) throw scriptError(err, script, args);
      const fallback = this.send(keys[0], ['EVAL', script.source, keys.length, ...keys, ...args]);
      return fallback.catch(scriptFailure(script, args));
    }
  }

  async setNxPx(key: string, value: string, ms: number): Promise<boolean> {
    return (await this.send(key, ['SET', key, value, 'PX', ms, 'NX'])) === 'OK';
  }

  async compareDelete(name: CompareDelete, key: string, value: string): Promise<boolean> {
    return Number(await this.send(key, [name, ...compareDeleteArgs(name, key, value)])) === 1;
  }

  async get(key: string): Promise<string | null> {
    const reply = await this.send(key, ['GET', key]);
    return reply === null || reply === undefined ? null : String(reply);
  }

  async hgetall(key: string): Promise<Record<string, string>> {
    return hashReply(flatten(await this.send(key, ['HGETALL', key])));
  }

  async exists(key: string): Promise<number> {
    return Number(await this.send(key, ['EXISTS', key]));
  }

  async xrange(key: string, start: string, end: string, count: number): Promise<StreamEntry[]> {
    return streamReply(flatten(await this.send(key, ['XRANGE', key, start, end, 'COUNT', count])));
  }

  async xrevrange(key: string, end: string, start: string, count: number): Promise<StreamEntry[]> {
    return streamReply(flatten(await this.send(key, ['XREVRANGE', key, end, start, 'COUNT', count])));
  }

  async waitReplicas(key: string, replicas: number, timeoutMs: number): Promise<number> {
    // GLIDE keeps one connection per node: routed by the key, WAIT counts the writes it carried.
    return Number(await this.send(key, ['WAIT', replicas, timeoutMs]));
  }

  servers(): ServerConnection[] {
    if (this.primaries) return this.primaries.list();
    return [
      new CommandServer(
        'the Valkey GLIDE client',
        () => this.state(),
        (args) => this.sendTo(args, 'randomNode'),
      ),
    ];
  }

  async serversKnown(): Promise<void> {
    await this.primaries?.whenKnown();
  }

  state(): ConnectionState {
    if (this.closed) return 'closed';
    // Until the cluster said which primaries it has, scripts cannot be loaded on them.
    return this.primaries && !this.primaries.known ? 'connecting' : 'ready';
  }

  /** Known only when no GLIDE client of this process has a connection open: see glide-outage.ts. */
  outage(): ConnectionOutage | undefined {
    return this.closed ? undefined : this.outages.current();
  }

  /** GLIDE reconnects by itself and says nothing; `ready` is when a cluster's list of primaries changed. */
  on(event: 'ready' | 'error', listener: (err: Error) => void): void {
    if (event === 'ready') this.readyListeners.add(listener);
  }

  off(event: 'ready' | 'error', listener: (err: Error) => void): void {
    if (event === 'ready') this.readyListeners.delete(listener);
  }

  describe(): string {
    return this.cluster ? 'the Valkey cluster through the GLIDE client' : 'Valkey through the GLIDE client';
  }

  subscriber(): SubscriberConnection {
    const c = this.client;
    return new GlideSubscriber(
      c,
      isGlideClusterClient(c)
        ? { subscribe: (names, ms) => c.ssubscribe(names, ms), unsubscribe: (names, ms) => c.sunsubscribe(names, ms) }
        : { subscribe: (names, ms) => c.subscribe(names, ms), unsubscribe: (names, ms) => c.unsubscribe(names, ms) },
    );
  }

  duplicate(): undefined {
    return undefined;
  }

  async close(): Promise<void> {
    // The application's client: it closes it.
    this.closed = true;
    this.primaries?.close();
    this.readyListeners.clear();
  }
}

function addressRoute(p: GlidePrimary): GlideRoute {
  return { type: 'routeByAddress', host: p.host, port: p.port };
}
