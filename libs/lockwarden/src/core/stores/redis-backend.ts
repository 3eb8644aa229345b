import type { LockLogger } from '../observe/logger';
import { loadScripts } from '../redis/lua-script';
import { aclCheck } from '../redis/acl-probe';
import type { LockBackend, OpenedBackend } from '../backend/lock-backend';
import { QuorumLockStore } from './quorum-store';
import { ConnectionWatch } from '../redis/connection-watch';
import { connectionsOutage } from '../redis/connection-outage';
import { openConnection } from '../redis/redis-client';
import type { RedisSpec, ResolvedQuorum } from '../redis/redis-client';
import { RedisLockStore } from './redis-store';
import { ReplicaAck } from '../redis/replica-ack';
import { RedisTickStore } from '../schedule/redis-tick-store';
import type { ReplicaAckOptions } from '../redis/replica-ack';
import { WakeChannels } from '../wake/wake-channels';
import { RedisWakeSubscriber } from '../redis/wake-subscriber';
import { surveyLocks } from './redis-survey';
import { redisTermLogs } from '../leader/redis-term-log';
import { EvictionWatch } from '../redis/eviction-watch';

/** The topology options of the Redis backend, checked. */
export interface RedisBackendOptions {
  readonly redis: RedisSpec | undefined;
  readonly quorum: ResolvedQuorum | undefined;
  readonly replicaAck: ReplicaAckOptions | undefined;
  /** The engine's key prefix, for the check of the Redis user's permissions (none without it). */
  readonly keyPrefix?: string;
  /** Whether acquires are refused on a server that may evict (its warning says so). */
  readonly onEvictingServer?: 'warn' | 'refuse';
}

/**
 * Wires a Redis topology: one server (or Sentinel, or Cluster) or a quorum of independent
 * masters, with the scripts loaded on every connect and one subscriber connection for
 * wake-ups. What it opens it closes; a client the user gave stays open.
 */
export class RedisBackend implements LockBackend {
  constructor(private readonly options: RedisBackendOptions) {}

  open(instanceId: string, logger: LockLogger): OpenedBackend {
    const { redis, quorum, replicaAck, keyPrefix } = this.options;
    const leases = (quorum ? quorum.nodes : [redis as RedisSpec]).map((spec) => openConnection(spec, logger));
    // A client the user gave is theirs to watch: listening to its errors would silence the client's own report.
    const watches = leases.filter((c) => c.owned).map((c) => new ConnectionWatch(c.connection, logger));
    const clients = leases.map((c) => c.connection);
    // The first connection's longer acquire budget (acquire-loop.ts); never pending with a quorum,
    // where each node is timed out by itself.
    const firstConnection = { pending: quorum === undefined && clients[0].state() !== 'ready' };
    const preloads = clients.map((client) => {
      const checkAcl = keyPrefix === undefined ? undefined : aclCheck(client, keyPrefix, !!replicaAck, logger);
      const preload = (): void => {
        firstConnection.pending = false;
        // Best effort: a script missing from the cache still runs, through the EVAL fallback.
        void loadScripts(client).catch(() => undefined);
        checkAcl?.();
      };
      client.on('ready', preload);
      if (client.state() === 'ready') preload();
      return preload;
    });
    const stores = clients.map(
      (client) =>
        new RedisLockStore(
          client,
          instanceId,
          replicaAck && new ReplicaAck(client, replicaAck, logger),
          // A quorum's grant takes the highest of its nodes' tokens: each node mints at the grant.
          quorum === undefined,
        ),
    );
    const bus = new WakeChannels((sink) => new RedisWakeSubscriber(clients, sink));
    // Every node of a quorum: a key evicted on one of them weakens the majority that holds it.
    const eviction = new EvictionWatch(clients, logger, this.options.onEvictingServer === 'refuse');
    return {
      store: quorum ? new QuorumLockStore(stores, quorum.nodeTimeoutMs) : stores[0],
      // With a quorum tick records live on the first node, as leadership terms do.
      ticks: new RedisTickStore(clients[0], instanceId),
      bus,
      client: clients[0].client,
      // With a quorum the survey and the leadership terms use the first node, as tick records do.
      survey: (prefix, options) => surveyLocks(clients[0], prefix, options),
      termLogs: () => redisTermLogs(clients[0], logger),
      // With a quorum, only as many nodes down as leave no majority are an outage.
      outage: connectionsOutage(clients),
      firstConnection,
      eviction,
      close: async () => {
        eviction.close();
        await bus.close();
        clients.forEach((client, i) => client.off('ready', preloads[i]));
        // A given client stays open: closing its connection closes only what was opened in its stead.
        await Promise.all(clients.map((client) => client.close()));
        for (const watch of watches) watch.detach();
      },
    };
  }
}
