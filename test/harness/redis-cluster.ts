import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { RedisProcess } from './redis-process';

const exec = promisify(execFile);

/**
 * A throwaway Redis Cluster on loopback: `masters` masters (3 by default), each
 * with `replicas` replicas, created with `redis-cli --cluster create`, ready
 * once every node reports all 16 384 slots served.
 */
export class RedisCluster {
  private constructor(readonly nodes: RedisProcess[]) {}

  static async start(options: { masters?: number; replicas?: number } = {}): Promise<RedisCluster> {
    const masters = options.masters ?? 3;
    const replicas = options.replicas ?? 0;
    const nodes = await Promise.all(
      Array.from({ length: masters * (1 + replicas) }, () =>
        RedisProcess.start({
          args: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000'],
        }),
      ),
    );
    const cluster = new RedisCluster(nodes);
    try {
      await exec('redis-cli', [
        '--cluster',
        'create',
        ...nodes.map((n) => `${n.host}:${n.port}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ]);
      await cluster.waitUntilHealthy();
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
    return new Cluster(this.startupNodes, options);
  }

  /** Resolves once every node sees the cluster as healthy and all slots served. */
  async waitUntilHealthy(timeoutMs = 30_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const states = await Promise.all(
        this.nodes.map(async (n) => {
          const c = new Redis(n.port, n.host, { lazyConnect: true, maxRetriesPerRequest: 0 });
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

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.destroy()));
  }
}
