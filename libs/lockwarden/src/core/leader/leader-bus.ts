import type { LockLogger } from '../observe/logger';
import type { ChannelListener } from '../backend/wake-bus';
import { redisReason } from '../../errors/redis-reason';
import type { RedisConnection, SubscriberConnection } from '../redis/connection';

/**
 * Hears leadership announcements on one subscriber connection of its own (made from the
 * engine's connection, sharded pub/sub on a Cluster), made on first use. Kept apart from
 * the wake-up bus of waiting acquires, whose channels come and go with every wait.
 * Messages sent while the connection was down are lost, so every listener is woken after
 * a reconnect and re-reads the log.
 */
export class LeaderBus implements ChannelListener {
  private sub: SubscriberConnection | undefined;
  private readonly channels = new Map<string, { wakers: Set<() => void>; ready: Promise<unknown> }>();
  private closed = false;

  constructor(
    private readonly main: RedisConnection,
    private readonly logger: LockLogger,
  ) {}

  async listen(channel: string, wake: () => void): Promise<() => void> {
    let state = this.channels.get(channel);
    if (!state) {
      const ready = this.connection().subscribe(channel);
      state = { wakers: new Set(), ready };
      this.channels.set(channel, state);
      // A failed subscribe is reported to the listener that awaits it; forget it so the next one retries.
      ready.catch(() => this.channels.get(channel) === state && this.channels.delete(channel));
    }
    state.wakers.add(wake);
    const joined = state;
    const leave = (): void => {
      joined.wakers.delete(wake);
      if (joined.wakers.size > 0 || this.channels.get(channel) !== joined) return;
      this.channels.delete(channel);
      const sub = this.sub;
      if (sub && !this.closed) sub.unsubscribe(channel).catch(() => undefined);
    };
    try {
      await joined.ready;
    } catch (err) {
      leave();
      throw err;
    }
    return leave;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const state of this.channels.values()) for (const wake of state.wakers) wake();
    this.channels.clear();
    const sub = this.sub;
    this.sub = undefined;
    if (sub) await sub.close();
  }

  private connection(): SubscriberConnection {
    if (this.sub) return this.sub;
    const sub = this.main.subscriber();
    sub.listen({
      message: (channel) => {
        for (const wake of this.channels.get(channel)?.wakers ?? []) wake();
      },
      channels: () => [...this.channels.keys()],
      // Listeners re-read the log once the channels are subscribed again, so nothing after it is missed.
      resubscribed: () => {
        for (const state of this.channels.values()) for (const wake of state.wakers) wake();
      },
      error: (err) => this.logger.debug(`Leadership subscriber: ${redisReason(err)}`),
    });
    this.sub = sub;
    return sub;
  }
}
