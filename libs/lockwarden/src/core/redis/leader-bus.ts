import type { Cluster, Redis } from 'ioredis';
import type { LockLogger } from '../observe/logger';
import { closeClient, resubscribe, subscriberOf } from './redis-client';
import type { RedisClient } from '../backend/lock-backend';
import type { ChannelListener } from '../backend/wake-bus';
import { redisReason } from '../../errors/redis-reason';

/**
 * Hears leadership announcements on one subscriber connection of its own (a duplicate of
 * the engine's client, sharded pub/sub on a Cluster), made on first use. Kept apart from
 * the wake-up bus of waiting acquires, whose channels come and go with every wait.
 * Messages sent while the connection was down are lost, so every listener is woken after
 * a reconnect and re-reads the log.
 */
export class LeaderBus implements ChannelListener {
  private sub: Redis | Cluster | undefined;
  private readonly channels = new Map<string, { wakers: Set<() => void>; ready: Promise<unknown> }>();
  private closed = false;
  private readonly sharded: boolean;

  constructor(
    private readonly main: RedisClient,
    private readonly logger: LockLogger,
  ) {
    this.sharded = main.isCluster;
  }

  async listen(channel: string, wake: () => void): Promise<() => void> {
    let state = this.channels.get(channel);
    if (!state) {
      const sub = this.connection();
      const ready = this.sharded ? sub.ssubscribe(channel) : sub.subscribe(channel);
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
      if (sub && !this.closed) {
        (this.sharded ? sub.sunsubscribe(channel) : sub.unsubscribe(channel)).catch(() => undefined);
      }
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
    if (sub) {
      sub.removeAllListeners('ready');
      await closeClient(sub);
    }
  }

  private connection(): Redis | Cluster {
    if (this.sub) return this.sub;
    const sub = subscriberOf(this.main);
    sub.on('error', (err: Error) => this.logger.debug(`Leadership subscriber: ${redisReason(err)}`));
    sub.on(this.sharded ? 'smessage' : 'message', (channel: string) => {
      for (const wake of this.channels.get(channel)?.wakers ?? []) wake();
    });
    let first = true;
    sub.on('ready', () => {
      if (first) {
        first = false;
        return;
      }
      // Listeners re-read the log once the channels are subscribed again, so nothing after it is missed.
      void resubscribe(sub, [...this.channels.keys()]).then(() => {
        for (const state of this.channels.values()) for (const wake of state.wakers) wake();
      });
    });
    this.sub = sub;
    return sub;
  }
}
