import type { SubscriberConnection } from './connection';

/** What the pub/sub of a Valkey GLIDE client (standalone or cluster) gives Lockwarden. */
export interface GlideMessageSource {
  getPubSubMessage(): Promise<{ channel: unknown; message: unknown }>;
}

/** Subscribing and unsubscribing: classic channels on one server, sharded ones on a cluster. */
export interface GlideChannels {
  subscribe(channels: string[], timeoutMs: number): Promise<void>;
  unsubscribe(channels: string[], timeoutMs: number): Promise<void>;
}

/** How long a GLIDE subscribe may take before it fails (its own calls take a timeout). */
const SUBSCRIBE_TIMEOUT_MS = 5_000;

type Handlers = Parameters<SubscriberConnection['listen']>[0];

/**
 * The one loop that reads a GLIDE client's pub/sub messages. A client has one message queue,
 * so every subscriber Lockwarden makes on it (one per engine, one after another) shares this
 * loop: the latest takes the messages, and none is read by a loop of a closed one.
 */
class GlideMessages {
  private static readonly loops = new WeakMap<GlideMessageSource, GlideMessages>();
  handlers: Handlers | undefined;
  private running = false;

  private constructor(private readonly client: GlideMessageSource) {}

  static of(client: GlideMessageSource): GlideMessages {
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

/**
 * Subscribes on the given client itself (GLIDE has no `duplicate()`); its messages come
 * through the client's one loop (GlideMessages). GLIDE subscribes again by itself after a
 * reconnection or a cluster's resharding, and says nothing: waiters look again on their own
 * timers meanwhile.
 */
export class GlideSubscriber implements SubscriberConnection {
  private readonly names = new Set<string>();
  private handlers: Handlers | undefined;
  private readonly messages: GlideMessages;

  constructor(
    source: GlideMessageSource,
    private readonly channels: GlideChannels,
  ) {
    this.messages = GlideMessages.of(source);
  }

  async subscribe(channel: string): Promise<unknown> {
    await this.channels.subscribe([channel], SUBSCRIBE_TIMEOUT_MS);
    this.names.add(channel);
    return undefined;
  }

  async unsubscribe(channel: string): Promise<unknown> {
    this.names.delete(channel);
    await this.channels.unsubscribe([channel], SUBSCRIBE_TIMEOUT_MS);
    return undefined;
  }

  listen(handlers: Handlers): void {
    this.handlers = handlers;
    this.messages.handlers = handlers;
    this.messages.start();
  }

  async close(): Promise<void> {
    if (this.messages.handlers === this.handlers) this.messages.handlers = undefined;
    const names = [...this.names];
    this.names.clear();
    if (names.length > 0) await this.channels.unsubscribe(names, SUBSCRIBE_TIMEOUT_MS).catch(() => undefined);
  }
}
