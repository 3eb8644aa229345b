import { Redis } from 'ioredis';
import { RedisProcess } from './redis-process';

const NAME = 'lockwarden';

/**
 * A throwaway Sentinel setup on loopback: one master, `replicas` replicas
 * (1 by default) and 3 sentinels with a quorum of 2. Sentinels declare a
 * master down after 1 s, so a failover completes in a few seconds.
 */
export class RedisSentinelGroup {
  private constructor(
    readonly master: RedisProcess,
    readonly replicas: RedisProcess[],
    readonly sentinels: RedisProcess[],
  ) {}

  static async start(options: { replicas?: number } = {}): Promise<RedisSentinelGroup> {
    const master = await RedisProcess.start();
    const started: RedisProcess[] = [master];
    try {
      const replicas = await Promise.all(
        Array.from({ length: options.replicas ?? 1 }, () =>
          RedisProcess.start({ args: ['--replicaof', master.host, String(master.port)] }),
        ),
      );
      started.push(...replicas);
      for (const r of replicas) await waitFor(r, 'INFO', 'replication', /master_link_status:up/);
      const sentinels = await Promise.all(
        Array.from({ length: 3 }, () =>
          RedisProcess.start({
            binary: 'redis-sentinel',
            configLines: [
              `sentinel monitor ${NAME} ${master.host} ${master.port} 2`,
              `sentinel down-after-milliseconds ${NAME} 1000`,
              `sentinel failover-timeout ${NAME} 10000`,
              `sentinel parallel-syncs ${NAME} 1`,
            ],
          }),
        ),
      );
      started.push(...sentinels);
      const group = new RedisSentinelGroup(master, replicas, sentinels);
      // Each sentinel must know the replicas and the other sentinels before it can fail over.
      for (const s of sentinels) {
        await waitFor(s, 'SENTINEL', `REPLICAS ${NAME}`, (reply) => (reply as unknown[]).length === replicas.length);
        await waitFor(s, 'SENTINEL', `SENTINELS ${NAME}`, (reply) => (reply as unknown[]).length === 2);
      }
      return group;
    } catch (err) {
      await Promise.all(started.map((p) => p.destroy()));
      throw err;
    }
  }

  get name(): string {
    return NAME;
  }

  /** ioredis options that find the master through the sentinels. */
  get options(): { sentinels: { host: string; port: number }[]; name: string } {
    return { sentinels: this.sentinels.map((s) => ({ host: s.host, port: s.port })), name: NAME };
  }

  /** The master's address as the sentinels report it now. */
  async currentMaster(): Promise<string> {
    const c = new Redis(this.sentinels[0].port, this.sentinels[0].host);
    try {
      const [host, port] = (await c.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', NAME)) as string[];
      return `${host}:${port}`;
    } finally {
      c.disconnect();
    }
  }

  /**
   * Kills the master and resolves once the sentinels have promoted another server. With
   * `lagDuring`, the replicas are frozen while it runs, so the master's last writes (what
   * happened during it) never reach the replica that is promoted: replication lag, made sure.
   */
  async killMasterAndFailOver(timeoutMs = 30_000, lagDuring?: () => Promise<void>): Promise<string> {
    const before = await this.currentMaster();
    if (lagDuring) {
      for (const r of this.replicas) r.freeze();
      // A frozen replica still gets what fits in the sockets' kernel buffers once it thaws, so
      // first fill them: what the master writes after this stays in its own memory, and dies
      // with it.
      const direct = new Redis(this.master.port, this.master.host);
      try {
        await direct.set('harness:replication-filler', 'x'.repeat(32 * 1024 * 1024));
      } finally {
        direct.disconnect();
      }
      try {
        await lagDuring();
      } finally {
        await this.master.kill();
        for (const r of this.replicas) r.thaw();
      }
    }
    await this.master.kill();
    const until = Date.now() + timeoutMs;
    for (;;) {
      const now = await this.currentMaster();
      if (now !== before) {
        const [host, port] = now.split(':');
        const promoted = new Redis(Number(port), host);
        try {
          const role = (await promoted.call('ROLE')) as string[];
          if (role[0] === 'master') return now;
        } finally {
          promoted.disconnect();
        }
      }
      if (Date.now() > until) throw new Error(`no failover within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.sentinels, ...this.replicas, this.master].map((p) => p.destroy()));
  }
}

/** Polls one server until a command's reply passes `ok` (a server's state, not a sleep). */
async function waitFor(
  server: RedisProcess,
  command: string,
  args: string,
  ok: RegExp | ((reply: unknown) => boolean),
  timeoutMs = 20_000,
): Promise<void> {
  const c = new Redis(server.port, server.host);
  const until = Date.now() + timeoutMs;
  try {
    for (;;) {
      const reply = await c.call(command, ...args.split(' '));
      if (ok instanceof RegExp ? ok.test(String(reply)) : ok(reply)) return;
      if (Date.now() > until) throw new Error(`${command} ${args} on :${server.port} never became ready`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    c.disconnect();
  }
}
