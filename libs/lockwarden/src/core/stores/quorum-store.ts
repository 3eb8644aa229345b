import { probeServers } from '../redis/health-probe';
import { afterReads } from '../redis/after-reads';
import type { LockInfo, SemaphoreInfo, ServerProbe } from '../backend/lock-info';
import type { MutexKeys } from '../backend/lock-keys';
import { RedisLockStore } from './redis-store';
import { noReadWrite, noSemaphore } from '../backend/lock-store';
import type { HeldRelease, LockStore, RenewItem, StoreAcquire } from '../backend/lock-store';

/** A node call that did not answer in time. */
class NodeTimeout extends Error {
  constructor(ms: number) {
    super(`the node did not answer within ${ms} ms`);
  }
}

type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/**
 * Redlock: one mutex held on a majority of N independent Redis masters.
 *
 * Every operation goes to all nodes at once, each with its own timeout well
 * under the lease, so a hung node costs a timeout, never the lease. A lock is
 * granted when a majority granted it and there is validity left
 * (lease − elapsed − clock drift); otherwise the partial grants are released
 * at once and the caller retries after a jittered pause. Renewal needs a
 * majority too. The fencing token is the highest token among the granting
 * majority, recorded back on it (fence-raise.lua) so that tokens keep rising
 * from one holder to the next.
 *
 * Fair acquires, read/write locks and semaphores need one server's view of the queue, of
 * the readers and of the permits; they are refused with a quorum.
 */
export class QuorumLockStore implements LockStore {
  readonly fairQueue = false;
  readonly readWrite = false;
  readonly rwQueue = false;
  readonly semaphores = false;
  readonly majority: number;

  constructor(
    private readonly nodes: readonly RedisLockStore[],
    private readonly nodeTimeoutMs: number,
  ) {
    this.majority = Math.floor(nodes.length / 2) + 1;
  }

  /** The grant on every node, then recording its token on the granting ones: each within the node timeout. */
  get attemptMs(): number {
    return 2 * this.nodeTimeoutMs + Math.max(0, ...this.nodes.map((n) => n.attemptMs));
  }

  /** Redlock's drift allowance: 1% of the lease plus 2 ms. */
  clockDriftMs(leaseMs: number): number {
    return Math.floor(leaseMs / 100) + 2;
  }

  /** Never needed: each node mints at the grant (plainGrants off), so a quorum grant always has its token. */
  mint(): Promise<number> {
    return Promise.reject(new Error('a quorum grant carries its fencing token: there is none to mint'));
  }

  async acquire(req: StoreAcquire): Promise<number> {
    const started = performance.now();
    const timeout = this.timeoutFor(req.leaseMs);
    const plain = { ...req, fair: false };
    const replies = await this.onAll((node) => node.acquire(plain), timeout);
    const granted = replies.flatMap((r, i) => (r.ok && r.value >= 0 ? [{ node: this.nodes[i], fence: r.value }] : []));
    if (granted.length >= this.majority) {
      const fence = Math.max(...granted.map((g) => g.fence));
      const behind = granted.filter((g) => g.fence < fence);
      const raised = await Promise.all(
        behind.map((g) =>
          this.within(g.node.raiseFence(req.keys, req.ownerToken, fence), timeout).then(settled, failed),
        ),
      );
      const recorded = granted.length - raised.filter((r) => !r.ok || !r.value).length;
      const validity = req.leaseMs - (performance.now() - started) - this.clockDriftMs(req.leaseMs);
      if (recorded >= this.majority && validity > 0) return fence;
    }
    await this.release(req.keys, req.ownerToken).catch(() => undefined);
    const failures = replies.filter((r) => !r.ok);
    if (failures.length > this.nodes.length - this.majority) {
      throw this.unreachable('acquire', failures);
    }
    // Held elsewhere, or split between contenders: retry when the earliest holder's lease
    // could end, with jitter so contenders that split the vote do not collide again.
    const waits = replies.flatMap((r) => (r.ok && r.value < 0 ? [-r.value] : []));
    const wait = waits.length > 0 ? Math.min(...waits) : 1;
    return -Math.max(1, Math.ceil(wait + Math.random() * Math.min(50, req.leaseMs / 10)));
  }

  async release(keys: MutexKeys, ownerToken: string): Promise<boolean> {
    const replies = await this.onAll((node) => node.release(keys, ownerToken), this.nodeTimeoutMs);
    if (replies.some((r) => r.ok && r.value)) return true;
    const failures = replies.filter((r) => !r.ok);
    if (failures.length === this.nodes.length) throw this.unreachable('release', failures);
    return false;
  }

  releaseHeld({ keys, ownerToken }: HeldRelease): Promise<boolean> {
    return this.release(keys, ownerToken);
  }

  async renew(items: readonly RenewItem[]): Promise<boolean[]> {
    const timeout = this.timeoutFor(Math.min(...items.map((i) => i.leaseMs)));
    const replies = await this.onAll((node) => node.renew(items), timeout);
    const failures = replies.filter((r) => !r.ok);
    const results = items.map((_, i) => {
      const yes = replies.filter((r) => r.ok && r.value[i]).length;
      return { yes, undecided: yes < this.majority && yes + failures.length >= this.majority };
    });
    // Too few nodes answered to tell: the watchdog retries within the lease, and aborts the
    // holder at its safety margin if a majority never confirms.
    if (results.some((r) => r.undecided)) throw this.unreachable('renew', failures);
    return results.map((r) => r.yes >= this.majority);
  }

  /** Held when a majority holds it; the view of the holding node with the highest token. */
  async inspect(prefix: string, key: string): Promise<LockInfo> {
    const views = await Promise.allSettled(this.nodes.map((node) => node.inspect(prefix, key)));
    const seen = views.flatMap((v) => (v.status === 'fulfilled' ? [v.value] : []));
    if (seen.length === 0) throw (views[0] as PromiseRejectedResult).reason;
    const newest = (list: LockInfo[]) => list.reduce((a, b) => ((b.fencingToken ?? 0) > (a.fencingToken ?? 0) ? b : a));
    const held = seen.filter((v) => v.held);
    if (held.length >= this.majority) return newest(held);
    return { ...newest(seen), held: false, kind: null, holders: [], leaseLeftMs: 0 };
  }

  async forceUnlock(prefix: string, key: string): Promise<boolean> {
    const results = await Promise.all(this.nodes.map((node) => node.forceUnlock(prefix, key)));
    return results.some(Boolean);
  }

  probe(timeoutMs: number): Promise<ServerProbe> {
    return probeServers(
      this.nodes.map((node) => node.client),
      timeoutMs,
      this.majority,
    );
  }

  rwAcquire(): Promise<number> {
    return Promise.reject(noReadWrite());
  }

  rwRelease(): Promise<boolean> {
    return Promise.reject(noReadWrite());
  }

  semAcquire(): Promise<number> {
    return Promise.reject(noSemaphore());
  }

  semRelease(): Promise<boolean> {
    return Promise.reject(noSemaphore());
  }

  semLimit(): Promise<number> {
    return Promise.reject(noSemaphore());
  }

  readonly permitHandOff = false;

  /** A quorum's grant is a majority's, never one node's script: no hand-off within the process. */
  readonly mutexHandOffHere = false;

  handOffMutex(): Promise<number> {
    return Promise.reject(new Error('handOffMutex is not available with a quorum'));
  }

  semHandOff(): Promise<{ released: boolean; fencingToken: number }> {
    return Promise.reject(noSemaphore());
  }

  semInspect(): Promise<SemaphoreInfo> {
    return Promise.reject(noSemaphore());
  }

  /** Per-node timeout: the configured one, but never more than a tenth of the lease. */
  private timeoutFor(leaseMs: number): number {
    return Math.max(5, Math.min(this.nodeTimeoutMs, Math.floor(leaseMs / 10)));
  }

  private onAll<T>(call: (node: RedisLockStore) => Promise<T>, timeoutMs: number): Promise<Outcome<T>[]> {
    return Promise.all(this.nodes.map((node) => this.within(call(node), timeoutMs).then(settled, failed)));
  }

  private within<T>(work: Promise<T>, ms: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        afterReads(() => reject(new NodeTimeout(ms))),
        ms,
      );
      timer.unref();
      work.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (err: unknown) => {
          clearTimeout(timer);
          reject(err);
        },
      );
    });
  }

  private unreachable(action: string, failures: Outcome<unknown>[]): Error {
    const first = failures.find((f): f is { ok: false; error: unknown } => !f.ok)?.error;
    const detail = first instanceof Error ? first.message : String(first);
    // The first failure stays the cause: a refusal there (redis-reason.ts) is told as one.
    return new Error(
      `could not ${action} on a majority of the ${this.nodes.length} quorum nodes (${failures.length} failed; first: ${detail})`,
      { cause: first },
    );
  }
}

function settled<T>(value: T): Outcome<T> {
  return { ok: true, value };
}

function failed(error: unknown): Outcome<never> {
  return { ok: false, error };
}
