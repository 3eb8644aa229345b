import type { Redis } from 'ioredis';
import { LeadershipRegistry, LockEngine } from '../libs/lockwarden/src/core';

export interface FailoverResult {
  /** From the leader's resign() call to the standby leading, ms. */
  readonly resignMs: number;
  /** From the leader vanishing (no release, no renewal) to the standby leading, ms. */
  readonly crashMs: number;
  /** The lease of the terms: the crash figure can't beat it, by design. */
  readonly leaseMs: number;
}

/** Two instances, one leading: how long until the other leads, after a resign and after a crash. */
export async function leaderFailover(url: string, leaseMs: number): Promise<FailoverResult> {
  const name = `bench-${Date.now()}`;
  const open = (): { engine: LockEngine; registry: LeadershipRegistry } => {
    const engine = new LockEngine({ redis: url, keyPrefix: 'bench:leader:', leaseMs });
    return { engine, registry: new LeadershipRegistry(engine) };
  };
  const a = open();
  const b = open();
  const c = open();
  try {
    await a.registry.leadership(name).campaign();
    const standby = b.registry.leadership(name).campaign();
    const resignStarted = performance.now();
    await a.registry.leadership(name).resign();
    await standby;
    const resignMs = performance.now() - resignStarted;

    // B leads; C waits. B "crashes": its watchdog stops and its connection drops, so its
    // lease is neither renewed nor released, as when a process dies.
    const next = c.registry.leadership(name).campaign();
    b.engine.watchdog.stop();
    const crashStarted = performance.now();
    (b.engine.client as Redis).disconnect();
    await next;
    return { resignMs, crashMs: performance.now() - crashStarted, leaseMs };
  } finally {
    for (const x of [a, b, c]) {
      await x.registry.close().catch(() => undefined);
      await x.engine.close().catch(() => undefined);
    }
  }
}
