import { redisReasonShort } from '../../errors/redis-reason';
import { afterReads } from './after-reads';
import type { LockLogger } from '../observe/logger';
import { megabytes } from '../backend/server-eviction';
import type { EvictingServer, EvictionReport, ServerEviction } from '../backend/server-eviction';
import type { RedisConnection, ServerConnection } from './connection';
import { infoFields, isEvicting } from './server-info';

/**
 * How often evicted_keys is read while locks are held on an evicting server. A holder hears of
 * an eviction within this, plus one look at its key: well within a second. Each look is one
 * INFO stats per evicting server; keyspace notifications would be cheaper when nothing is
 * evicted, but they are off unless the server is configured for them, and under an eviction
 * storm they send every instance one message per evicted key, cache keys included.
 */
const POLL_MS = 250;

interface ServerState {
  server: ServerConnection;
  readonly name: string;
  policy: string;
  maxmemory: number;
  /** evicted_keys when last read; undefined before the first read. */
  last?: number;
  /** Evictions seen since the engine started. */
  counted: number;
}

/**
 * Reads every server's memory policy from `INFO memory` (not CONFIG, which managed services
 * refuse) when a connection is first ready and each time it is again, and warns once per
 * server that may evict. While the engine holds locks, reads `evicted_keys` of the evicting
 * servers a few times a second and tells the engine when it grew.
 */
export class EvictionWatch implements ServerEviction {
  private readonly states = new Map<string, ServerState>();
  private readonly warned = new Set<string>();
  private infoRefusedTold = false;
  /** Clients not yet looked at once. */
  private readonly unchecked: Set<RedisConnection>;
  private readonly firstLook: Promise<void>;
  private firstLookDone!: () => void;
  private pending = true;
  private watcher: { active: () => boolean; check: (reason: string) => void } | undefined;
  /** Clients that were ready once: a later 'ready' is a reconnection. */
  private readonly seenReady = new Set<RedisConnection>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private closed = false;
  private readonly listeners: Array<() => void>;

  constructor(
    private readonly clients: readonly RedisConnection[],
    private readonly logger: LockLogger,
    /** onEvictingServer: 'refuse': the warning says that acquires are refused. */
    private readonly refuse = false,
  ) {
    this.unchecked = new Set(clients);
    this.firstLook = new Promise((resolve) => (this.firstLookDone = resolve));
    this.listeners = clients.map((client) => {
      const look = (): void => {
        if (this.seenReady.has(client)) this.reconnected(client);
        this.seenReady.add(client);
        void this.look(client);
      };
      client.on('ready', look);
      if (client.state() === 'ready') look();
      return look;
    });
  }

  evicting(): EvictingServer | undefined | 'pending' {
    if (this.pending) return 'pending';
    const s = this.evictingStates()[0];
    return s ? { server: s.name, policy: s.policy, maxmemory: s.maxmemory } : undefined;
  }

  async checked(ms: number): Promise<void> {
    if (!this.pending) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
    try {
      await Promise.race([this.firstLook, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  async report(timeoutMs: number): Promise<EvictionReport> {
    // Right after startup the first look may still be on its way: its answer is the report's.
    await this.checked(timeoutMs);
    // A policy changed on the server since (fixed, say) shows at the next health check, not only
    // at the next reconnection.
    await bounded(
      Promise.all(this.clients.filter((c) => c.state() === 'ready').map((c) => this.look(c))),
      timeoutMs,
    ).catch(() => undefined);
    const evicting = this.evictingStates();
    if (evicting.length === 0) return { keysMayBeEvicted: false };
    await this.readEvictions(evicting, timeoutMs);
    return {
      keysMayBeEvicted: true,
      evictionPolicy: evicting[0].policy,
      evictedKeys: evicting.reduce((sum, s) => sum + s.counted, 0),
    };
  }

  watch(active: () => boolean, check: (reason: string) => void): void {
    this.watcher = { active, check };
    this.arm();
  }

  /**
   * A connection that came back may find keys gone (a Redis restarted without persistence, a
   * failover that lost writes): the held locks are looked at now, not at their next renewal.
   */
  private reconnected(client: RedisConnection): void {
    const watcher = this.watcher;
    if (!watcher || this.closed || !watcher.active()) return;
    watcher.check(
      `its key was gone from Redis when the connection to ${client.describe()} came back ` +
        '(a restart without persistence, or a failover that lost it)',
    );
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    this.timer = undefined;
    this.clients.forEach((client, i) => client.off('ready', this.listeners[i]));
    this.firstLookDone();
  }

  private evictingStates(): ServerState[] {
    return [...this.states.values()].filter((s) => isEvicting(s.maxmemory, s.policy));
  }

  /** Reads the memory policy of every server behind `client`; warns of those that evict. */
  private async look(client: RedisConnection): Promise<void> {
    try {
      await client.serversKnown?.();
      await Promise.all(client.servers().map((server) => this.lookAt(server)));
    } catch (err) {
      // A connection lost again before the look ended: it is looked at again when it is back.
      this.logger.debug(`Could not read the memory policy of ${client.describe()}: ${redisReasonShort(err)}`);
    } finally {
      this.unchecked.delete(client);
      if (this.unchecked.size === 0 && this.pending) {
        this.pending = false;
        this.firstLookDone();
      }
      this.arm();
    }
  }

  private async lookAt(server: ServerConnection): Promise<void> {
    let memory: Map<string, string>;
    try {
      memory = infoFields(await server.info('memory'));
    } catch (err) {
      if (!/NOPERM|no permissions/i.test(String((err as Error)?.message))) throw err;
      if (!this.infoRefusedTold) {
        this.infoRefusedTold = true;
        this.logger.warn(
          `Could not check whether Redis at ${server.address} may evict lock keys: it refused INFO ` +
            `(${redisReasonShort(err)}). Allow it for Lockwarden's user with: ACL SETUSER <user> +info`,
        );
      }
      return;
    }
    const policy = memory.get('maxmemory_policy') ?? 'noeviction';
    const maxmemory = Number(memory.get('maxmemory') ?? 0);
    const name = `Redis at ${server.address}`;
    const known = this.states.get(server.address);
    const changed = !known || known.policy !== policy || known.maxmemory !== maxmemory;
    const state = known ?? { server, name, policy, maxmemory, counted: 0 };
    Object.assign(state, { server, policy, maxmemory });
    this.states.set(server.address, state);
    if (isEvicting(maxmemory, policy)) {
      // Evictions are counted from the first look: what happened before this engine is not its business.
      if (state.last === undefined) await this.readEvictions([state], Infinity);
      this.warnOnce(state);
    }
    if (changed) {
      const limit = maxmemory > 0 ? megabytes(maxmemory) : 'none';
      this.logger.debug(`Looked at ${name}: maxmemory-policy ${policy}, maxmemory ${limit}.`);
    }
  }

  private warnOnce({ server, name, policy, maxmemory }: ServerState): void {
    if (this.warned.has(server.address)) return;
    this.warned.add(server.address);
    this.logger.warn(
      `${name} may evict lock keys (maxmemory-policy ${policy}, maxmemory ${megabytes(maxmemory)}): ` +
        'a lock key can be evicted while its holder still works under it, and another instance can then take ' +
        'the lock. Set maxmemory-policy noeviction there, or give the locks a Redis of their own. ' +
        (this.refuse
          ? "Until then every acquire is refused (onEvictingServer: 'refuse'); the policy is read again at each " +
            'health check and reconnection.'
          : 'Until then Lockwarden looks for evictions while it holds locks and aborts the signals of the holders ' +
            'that lost theirs.'),
    );
  }

  /** Reads evicted_keys of `states`, within `timeoutMs`; returns the servers where it grew, and by how much. */
  private async readEvictions(states: readonly ServerState[], timeoutMs: number): Promise<string[]> {
    const grown: string[] = [];
    await Promise.all(
      states.map(async (state) => {
        let n: number;
        try {
          const stats = infoFields(await bounded(state.server.info('stats'), timeoutMs));
          n = Number(stats.get('evicted_keys') ?? 0);
        } catch {
          return;
        }
        const before = state.last;
        state.last = n;
        if (before === undefined) return;
        // A counter that went down is a restarted server: all it counts is new.
        const more = n >= before ? n - before : n;
        if (more === 0) return;
        state.counted += more;
        grown.push(`${state.name} evicted ${more} key(s) (maxmemory-policy ${state.policy})`);
      }),
    );
    return grown;
  }

  /** Polls while some server evicts and a watcher is set; one timer for every server. */
  private arm(): void {
    const wanted = !this.closed && this.watcher !== undefined && this.evictingStates().length > 0;
    if (wanted && !this.timer) {
      this.timer = setInterval(() => void this.poll(), POLL_MS);
      this.timer.unref();
    } else if (!wanted && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private async poll(): Promise<void> {
    const watcher = this.watcher;
    if (!watcher || this.polling || !watcher.active()) return;
    this.polling = true;
    try {
      const grown = await this.readEvictions(this.evictingStates(), POLL_MS * 4);
      if (grown.length > 0 && !this.closed) watcher.check(`its key was evicted (${grown.join('; ')})`);
    } finally {
      this.polling = false;
    }
  }
}

/** `work`, or a rejection once `ms` passed. */
function bounded<T>(work: Promise<T>, ms: number): Promise<T> {
  if (!Number.isFinite(ms)) return work;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      afterReads(() => reject(new Error(`no answer within ${ms} ms`))),
      ms,
    );
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
