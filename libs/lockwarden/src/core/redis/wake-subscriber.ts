import type { WakeSink, WakeSubscriber } from '../backend/wake-bus';
import type { RedisConnection, SubscriberConnection } from './connection';

/**
 * The Redis half of the wake-up bus: one subscriber connection per engine (per node in
 * a quorum), made on first use, that hands release and grant messages to the bus.
 */
export class RedisWakeSubscriber implements WakeSubscriber {
  private subscribers: SubscriberConnection[] | undefined;
  /** The channels subscribed: what a connection that came back subscribes to again. */
  private readonly channels = new Set<string>();

  /**
   * `mains` are the connections to make subscribers from: one, or with a quorum one per
   * node (a release heard from any node wakes the waiter).
   */
  constructor(
    private readonly mains: readonly RedisConnection[],
    private readonly sink: WakeSink,
  ) {}

  /**
   * Subscribes on every connection. Ready once one of them has subscribed: in
   * a quorum a node that is down must not hold waiters up, and a release
   * is published on every node that held the lock.
   */
  subscribe(channel: string): Promise<unknown> {
    const subs = this.connections();
    // No connection at all: nothing will be heard, and nothing holds the waiter up.
    if (subs.length === 0) return Promise.resolve();
    this.channels.add(channel);
    const each = subs.map((sub) => sub.subscribe(channel));
    const done = each.length === 1 ? each[0] : Promise.any(each);
    for (const p of each) p.catch(() => undefined);
    return done;
  }

  unsubscribe(channel: string): void {
    this.channels.delete(channel);
    for (const sub of this.subscribers ?? []) sub.unsubscribe(channel).catch(() => undefined);
  }

  async close(): Promise<void> {
    const subs = this.subscribers ?? [];
    this.subscribers = undefined;
    await Promise.all(subs.map((sub) => sub.close()));
  }

  private connections(): SubscriberConnection[] {
    this.subscribers ??= this.mains.map((main) => this.connect(main));
    return this.subscribers;
  }

  private connect(main: RedisConnection): SubscriberConnection {
    // Ours, even when the main client is the user's (but for `redis` 5's Sentinel, which cannot be
    // duplicated: its own pub/sub connection carries our channels, and closing ours leaves it open).
    const sub = main.subscriber();
    sub.listen({
      message: (channel, message) => this.sink.deliver(channel, message),
      channels: () => [...this.channels],
      // Waiters retry once the channels are subscribed again, so a release after their retry is heard.
      resubscribed: () => this.sink.reconnected(),
      error: () => {
        // Reconnection is automatic; waits are capped by the lease, so nothing hangs meanwhile.
      },
    });
    return sub;
  }
}
