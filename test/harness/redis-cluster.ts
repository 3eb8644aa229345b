import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { startedForFile } from './for-file';
import { RedisProcess } from './redis-process';
import { adminOptions, redisCliTlsArgs } from './tls';

const exec = promisify(execFile);

/**
 * A throwaway Redis Cluster on loopback: `masters` masters (3 by default), each
 * with `replicas` replicas, created with `redis-cli --cluster create`, ready
 * once every node reports all 16 384 slots served.
 */
export class RedisCluster {
  private constructor(readonly nodes: RedisProcess[]) {}

  static async start(
    options: {
      masters?: number;
      replicas?: number;
      /** A server binary other than redis-server (Valkey 9). */ binary?: string;
    } = {},
  ): Promise<RedisCluster> {
    const masters = options.masters ?? 3;
    const replicas = options.replicas ?? 0;
    const nodes = await Promise.all(
      Array.from({ length: masters * (1 + replicas) }, () =>
        RedisProcess.start({
          binary: options.binary,
          args: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000'],
        }),
      ),
    );
    const cluster = new RedisCluster(nodes);
    try {
      await exec('redis-cli', [
        ...redisCliTlsArgs(),
        '--cluster',
        'create',
        ...nodes.map((n) => `${n.host}:${n.port}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ]);
      await cluster.waitUntilHealthy();
      await cluster.waitForReplicas(masters * replicas);
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  get startupNodes(): { host: string; port: number }[] {
    return this.nodes.map((n) => ({ host: n.host, port: n.port }));
  }

  /** A new Cluster client; the caller closes it. */
  client(options: ConstructorParameters<typeof Cluster>[1] = {}): Cluster {
    return new Cluster(this.startupNodes, { ...options, redisOptions: adminOptions(options.redisOptions) });
  }

  /** Resolves once every node sees the cluster as healthy and all slots served. */
  async waitUntilHealthy(timeoutMs = 30_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const states = await Promise.all(
        this.nodes.map(async (n) => {
          const c = new Redis(n.port, n.host, adminOptions({ lazyConnect: true, maxRetriesPerRequest: 0 }));
          try {
            await c.connect();
            return await c.call('CLUSTER', 'INFO');
          } catch {
            return '';
          } finally {
            c.disconnect();
          }
        }),
      );
      if (states.every((s) => /cluster_state:ok/.test(String(s)) && /cluster_slots_ok:16384/.test(String(s)))) return;
      if (Date.now() > until) throw new Error(`cluster not healthy after ${timeoutMs} ms:\n${String(states[0])}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * Moves one hash slot, with its keys, to the master on `toPort`, the way
   * `redis-cli --cluster reshard` does: IMPORTING/MIGRATING, MIGRATE in
   * batches, then SETSLOT NODE on every master. `between` runs once the slot is
   * marked migrating and before any key moves, so a test can act mid-migration.
   */
  async migrateSlot(slot: number, toPort: number, between?: () => Promise<void>): Promise<void> {
    const masters = await this.masters();
    const from = masters.find((m) => m.slots.some(([a, b]) => slot >= a && slot <= b))!;
    const to = masters.find((m) => m.port === toPort)!;
    if (from.port === to.port) throw new Error(`slot ${slot} is already on :${toPort}`);
    const source = new Redis(from.port, '127.0.0.1', adminOptions());
    const target = new Redis(to.port, '127.0.0.1', adminOptions());
    try {
      await target.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', from.id);
      await source.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', to.id);
      await between?.();
      for (;;) {
        const keys = (await source.call('CLUSTER', 'GETKEYSINSLOT', slot, 100)) as string[];
        if (keys.length === 0) break;
        await source.call('MIGRATE', '127.0.0.1', to.port, '', 0, 5_000, 'REPLACE', 'KEYS', ...keys);
      }
      for (const m of masters) {
        const c = new Redis(m.port, '127.0.0.1', adminOptions());
        await c.call('CLUSTER', 'SETSLOT', slot, 'NODE', to.id).finally(() => c.disconnect());
      }
    } finally {
      source.disconnect();
      target.disconnect();
    }
  }

  /** Resolves once `count` nodes are replicas with their link to the master up. */
  private async waitForReplicas(count: number, timeoutMs = 30_000): Promise<void> {
    if (count === 0) return;
    const until = Date.now() + timeoutMs;
    for (;;) {
      const links = await Promise.all(
        this.nodes.map(async (n) => {
          const c = new Redis(n.port, n.host, adminOptions());
          try {
            return /role:slave[\s\S]*master_link_status:up/.test(String(await c.info('replication')));
          } finally {
            c.disconnect();
          }
        }),
      );
      if (links.filter(Boolean).length === count) return;
      if (Date.now() > until) throw new Error(`only ${links.filter(Boolean).length} of ${count} replicas came up`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Resolves once another node has taken over the slots of the failed master `id`, and every live node sees the cluster ok. */
  async waitUntilPromoted(id: string, timeoutMs = 30_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const live = this.nodes.filter((n) => n.child && n.child.exitCode === null && n.child.signalCode === null);
      const states = await Promise.all(
        live.map(async (n) => {
          const c = new Redis(n.port, n.host, adminOptions());
          try {
            return String(await c.call('CLUSTER', 'INFO'));
          } finally {
            c.disconnect();
          }
        }),
      );
      const masters = await this.masters().catch(() => []);
      const failedOwnsNothing = masters.every((m) => m.id !== id || m.slots.length === 0);
      const ownersOfAll = masters.reduce((n, m) => n + m.slots.reduce((k, [a, b]) => k + b - a + 1, 0), 0);
      if (states.every((s) => /cluster_state:ok/.test(s)) && failedOwnsNothing && ownersOfAll === 16_384) return;
      if (Date.now() > until) throw new Error(`no replica took over from ${id} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * Makes each node announce `ports[i]` (`cluster-announce-port`) instead of its own port, as a
   * node behind NAT does, and resolves once every node reports them all: a client that follows
   * the cluster's own addresses (Valkey GLIDE, which has no address map) then reaches each node
   * there, through a fault proxy listening on that port.
   */
  async announce(ports: readonly number[]): Promise<void> {
    await Promise.all(
      this.nodes.map(async (n, i) => {
        const c = new Redis(n.port, n.host, adminOptions());
        try {
          await c.config('SET', 'cluster-announce-port', String(ports[i]));
        } finally {
          c.disconnect();
        }
      }),
    );
    for (;;) {
      const views = await Promise.all(
        this.nodes.map(async (n) => {
          const c = new Redis(n.port, n.host, adminOptions());
          try {
            return String(await c.call('CLUSTER', 'NODES'));
          } finally {
            c.disconnect();
          }
        }),
      );
      if (views.every((v) => ports.every((p) => v.includes(`:${p}@`)))) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** A lock key (`<name>-<n>`) whose Redis keys, `<keyPrefix>{key}…`, live in `master`'s slots. */
  async keyOn(master: { slots: [number, number][] }, keyPrefix: string, name: string): Promise<string> {
    const probe = this.client();
    try {
      for (let i = 0; ; i++) {
        const key = `${name}-${i}`;
        const slot = Number(await probe.cluster('KEYSLOT', `${keyPrefix}{${key}}`));
        if (master.slots.some(([a, b]) => slot >= a && slot <= b)) return key;
      }
    } finally {
      probe.disconnect();
    }
  }

  /** The masters with their node ids and slot ranges, as the cluster reports them. */
  async masters(): Promise<{ id: string; port: number; slots: [number, number][] }[]> {
    const live = this.nodes.find((n) => n.child && n.child.exitCode === null && n.child.signalCode === null)!;
    const c = new Redis(live.port, live.host, adminOptions());
    try {
      const text = String(await c.call('CLUSTER', 'NODES'));
      return text
        .trim()
        .split('\n')
        .map((line) => line.split(' '))
        .filter((f) => f[2].includes('master') && !f[2].includes('fail'))
        .map((f) => ({
          id: f[0],
          port: Number(f[1].split(':')[1].split('@')[0]),
          slots: f
            .slice(8)
            .filter((r) => !r.startsWith('['))
            .map((r) => {
              const [a, b] = r.split('-').map(Number);
              return [a, b ?? a] as [number, number];
            }),
        }));
    } finally {
      c.disconnect();
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.destroy()));
  }
}

/**
 * A Cluster of this spec file's own (RedisCluster.start, with its options), started before its
 * tests and stopped after them, with an admin Cluster client beside it; `where` is what an
 * engineFactory is given, and `atEnd` is as redisForFile's. Read the fields inside hooks and
 * tests, once the Cluster is up.
 */
export function clusterForFile(options: Parameters<typeof RedisCluster.start>[0] = {}): {
  readonly cluster: RedisCluster;
  readonly admin: Cluster;
  where(): { cluster: { host: string; port: number }[] };
  atEnd(...close: (() => unknown)[]): void;
} {
  const file = startedForFile(
    'Cluster',
    async () => {
      const cluster = await RedisCluster.start(options);
      return { cluster, admin: cluster.client() };
    },
    async ({ cluster, admin }) => {
      admin.disconnect();
      await cluster.stop();
    },
    60_000,
  );
  return {
    get cluster() {
      return file.value().cluster;
    },
    get admin() {
      return file.value().admin;
    },
    where: () => ({ cluster: file.value().cluster.startupNodes }),
    atEnd: file.atEnd,
  };
}
