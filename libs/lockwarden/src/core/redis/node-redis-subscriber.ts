import type { SubscriberConnection } from './connection';
import type {
  AnyNodeRedis,
  AnyPubSubListener,
  NodeRedisClient,
  NodeRedisCluster,
  NodeRedisSentinel,
  PubSubListener,
} from './node-redis-types';

/** Closes a node-redis client Lockwarden opened; one still connecting (Redis down) is dropped at once. */
export async function closeNodeClient(client: AnyNodeRedis): Promise<void> {
  if (!client.isOpen) return;
  if ((client as { isReady?: boolean }).isReady === false) await client.destroy();
  else await client.close().catch(() => client.destroy());
}

export function noop(): void {}

/** node-redis wants one listener per channel; ours hands every message to one handler. */
export class NodeRedisSubscriber implements SubscriberConnection {
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
export class SentinelOwnSubscriber implements SubscriberConnection {
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
