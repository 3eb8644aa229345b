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

/** One channel's subscription on a client: how many of Lockwarden's subscribers want it, and when it took. */
interface ChannelRef {
  count: number;
  readonly ready: Promise<void>;
}

/**
 * The one reader of a GLIDE client's pub/sub. A client has one message queue and one set of
 * subscriptions, while Lockwarden makes several subscribers on it (an engine's wake-ups and
 * its leaderships; the engines of a test or of the CLI beside the app's): each message goes
 * to every live subscriber, and a channel stays subscribed while any of them wants it.
 */
class GlideMessages {
  private static readonly shared = new WeakMap<GlideMessageSource, GlideMessages>();
  private readonly listeners = new Set<Handlers>();
  private readonly refs = new Map<string, ChannelRef>();
  private running = false;

  private constructor(
    private readonly client: GlideMessageSource,
    private readonly channels: GlideChannels,
  ) {}

  static of(client: GlideMessageSource, channels: GlideChannels): GlideMessages {
    let shared = GlideMessages.shared.get(client);
    if (!shared) {
      shared = new GlideMessages(client, channels);
      GlideMessages.shared.set(client, shared);
    }
    return shared;
  }

  listen(handlers: Handlers): void {
    this.listeners.add(handlers);
    if (this.running) return;
    this.running = true;
    void this.read();
  }

  unlisten(handlers: Handlers): void {
    this.listeners.delete(handlers);
  }

  /** Subscribes once per client; a second subscriber of the channel waits for the same confirmation. */
  async subscribe(channel: string): Promise<void> {
    const known = this.refs.get(channel);
    if (known) {
      known.count++;
      return known.ready;
    }
    const ref: ChannelRef = { count: 1, ready: this.channels.subscribe([channel], SUBSCRIBE_TIMEOUT_MS) };
    this.refs.set(channel, ref);
    try {
      await ref.ready;
    } catch (err) {
      if (this.refs.get(channel) === ref) this.refs.delete(channel);
      throw err;
    }
  }

  /** Unsubscribes once the last subscriber that wanted the channel let it go. */
  async unsubscribe(channel: string): Promise<void> {
    const ref = this.refs.get(channel);
    if (!ref || --ref.count > 0) return;
    this.refs.delete(channel);
    await this.channels.unsubscribe([channel], SUBSCRIBE_TIMEOUT_MS);
  }

  private async read(): Promise<void> {
    for (;;) {
      let m: { channel: unknown; message: unknown };
      try {
        m = await this.client.getPubSubMessage();
      } catch (err) {
        // The application closed its client: nothing more will come.
        this.running = false;
        const error = err instanceof Error ? err : new Error(String(err));
        for (const l of this.listeners) l.error(error);
        return;
      }
      const channel = String(m.channel);
      const message = String(m.message);
      for (const l of this.listeners) l.message(channel, message);
    }
  }
}

/**
 * Subscribes on the given client itself (GLIDE has no `duplicate()`), through the client's
 * one reader (GlideMessages), and hears only the channels it subscribed. GLIDE subscribes
 * again by itself after a reconnection or a cluster's resharding, and says nothing: waiters
 * look again on their own timers meanwhile.
 */
export class GlideSubscriber implements SubscriberConnection {
  private readonly names = new Set<string>();
  private handlers: Handlers | undefined;
  private readonly messages: GlideMessages;

  constructor(source: GlideMessageSource, channels: GlideChannels) {
    this.messages = GlideMessages.of(source, channels);
  }

  async subscribe(channel: string): Promise<unknown> {
    if (this.names.has(channel)) return undefined;
    this.names.add(channel);
    try {
      await this.messages.subscribe(channel);
    } catch (err) {
      this.names.delete(channel);
      throw err;
    }
    return undefined;
  }

  async unsubscribe(channel: string): Promise<unknown> {
    if (!this.names.delete(channel)) return undefined;
    await this.messages.unsubscribe(channel);
    return undefined;
  }

  listen(handlers: Handlers): void {
    const own: Handlers = {
      ...handlers,
      message: (channel, message) => {
        if (this.names.has(channel)) handlers.message(channel, message);
      },
    };
    this.handlers = own;
    this.messages.listen(own);
  }

  async close(): Promise<void> {
    if (this.handlers) this.messages.unlisten(this.handlers);
    const names = [...this.names];
    this.names.clear();
    await Promise.all(names.map((name) => this.messages.unsubscribe(name).catch(() => undefined)));
  }
}
