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

/**
 * What Lockwarden uses of a Valkey GLIDE client (`@valkey/valkey-glide` 2.x, `GlideClient`),
 * described by shape so that GLIDE is never loaded unless the application gives one. Every
 * command goes through `customCommand`; pub/sub through `subscribe` and `getPubSubMessage`
 * (GLIDE speaks RESP3, so a subscribed client still runs commands).
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

/** How long a GLIDE subscribe may take before it fails (its own calls take a timeout). */
const SUBSCRIBE_TIMEOUT_MS = 5_000;

/**
 * A Valkey GLIDE client (standalone) as a RedisConnection. GLIDE has no `duplicate()` and no
 * connection events: Lockwarden subscribes on the given client itself, so that client must
 * not serve the application's own pub/sub, and there is no stand-in connection for when the
 * application closes it.
 */
export class GlideConnection implements RedisConnection {
  readonly kind = 'glide';
  readonly cluster = false;
  private closed = false;

  constructor(readonly client: GlideClientLike) {}

  private send(args: (string | number)[]): Promise<unknown> {
    return this.client.customCommand(args.map(String));
  }

  async run(script: ScriptSource, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await this.send(['EVALSHA', script.sha, keys.length, ...keys, ...args]);
    } catch (err) {
      if (!isGlideNoScript(err)) throw err;
      return this.send(['EVAL', script.source, keys.length, ...keys, ...args]);
    }
  }

  async setNxPx(key: string, value: string, ms: number): Promise<boolean> {
    return (await this.send(['SET', key, value, 'PX', ms, 'NX'])) === 'OK';
  }

  async compareDelete(name: CompareDelete, key: string, value: string): Promise<boolean> {
    return Number(await this.send([name, ...compareDeleteArgs(name, key, value)])) === 1;
  }

  async get(key: string): Promise<string | null> {
    const reply = await this.send(['GET', key]);
    return reply === null || reply === undefined ? null : String(reply);
  }

  async hgetall(key: string): Promise<Record<string, string>> {
    return hashReply(flatten(await this.send(['HGETALL', key])));
  }

  async exists(key: string): Promise<number> {
    return Number(await this.send(['EXISTS', key]));
  }

  async xrange(key: string, start: string, end: string, count: number): Promise<StreamEntry[]> {
    return streamReply(flatten(await this.send(['XRANGE', key, start, end, 'COUNT', count])));
  }

  async xrevrange(key: string, end: string, start: string, count: number): Promise<StreamEntry[]> {
    return streamReply(flatten(await this.send(['XREVRANGE', key, end, start, 'COUNT', count])));
  }

  async waitReplicas(_key: string, replicas: number, timeoutMs: number): Promise<number> {
    return Number(await this.send(['WAIT', replicas, timeoutMs]));
  }

  servers(): ServerConnection[] {
    return [
      new CommandServer(
        'the Valkey GLIDE client',
        () => this.state(),
        (args) => this.send(args),
      ),
    ];
  }

  state(): ConnectionState {
    return this.closed ? 'closed' : 'ready';
  }

  // GLIDE reconnects by itself and says nothing: no events to pass on.
  on(): void {}

  off(): void {}

  describe(): string {
    return 'Valkey through the GLIDE client';
  }

  subscriber(): SubscriberConnection {
    return new GlideSubscriber(this.client);
  }

  duplicate(): undefined {
    return undefined;
  }

  async close(): Promise<void> {
    // The application's client: it closes it.
    this.closed = true;
  }
}

/**
 * The one loop that reads a GLIDE client's pub/sub messages. A client has one message queue,
 * so every subscriber Lockwarden makes on it (one per engine, one after another) shares this
 * loop: the latest takes the messages, and none is read by a loop of a closed one.
 */
class GlideMessages {
  private static readonly loops = new WeakMap<GlideClientLike, GlideMessages>();
  handlers: Parameters<SubscriberConnection['listen']>[0] | undefined;
  private running = false;

  private constructor(private readonly client: GlideClientLike) {}

  static of(client: GlideClientLike): GlideMessages {
    let loop = GlideMessages.loops.get(client);
    if (!loop) {
      loop = new GlideMessages(client);
      GlideMessages.loops.set(client, loop);
    }
    return loop;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    void this.read();
  }

  private async read(): Promise<void> {
    for (;;) {
      let m: { channel: unknown; message: unknown };
      try {
        m = await this.client.getPubSubMessage();
      } catch (err) {
        // The application closed its client: nothing more will come.
        this.running = false;
        this.handlers?.error(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      this.handlers?.message(String(m.channel), String(m.message));
    }
  }
}

/** Subscribes on the given client; its messages come through the client's one loop (GlideMessages). */
class GlideSubscriber implements SubscriberConnection {
  private readonly channels = new Set<string>();
  private handlers: Parameters<SubscriberConnection['listen']>[0] | undefined;
  private readonly messages: GlideMessages;

  constructor(private readonly client: GlideClientLike) {
    this.messages = GlideMessages.of(client);
  }

  async subscribe(channel: string): Promise<unknown> {
    await this.client.subscribe([channel], SUBSCRIBE_TIMEOUT_MS);
    this.channels.add(channel);
    return undefined;
  }

  async unsubscribe(channel: string): Promise<unknown> {
    this.channels.delete(channel);
    await this.client.unsubscribe([channel], SUBSCRIBE_TIMEOUT_MS);
    return undefined;
  }

  listen(handlers: Parameters<SubscriberConnection['listen']>[0]): void {
    this.handlers = handlers;
    this.messages.handlers = handlers;
    this.messages.start();
  }

  async close(): Promise<void> {
    if (this.messages.handlers === this.handlers) this.messages.handlers = undefined;
    const channels = [...this.channels];
    this.channels.clear();
    if (channels.length > 0) await this.client.unsubscribe(channels, SUBSCRIBE_TIMEOUT_MS).catch(() => undefined);
  }
}
