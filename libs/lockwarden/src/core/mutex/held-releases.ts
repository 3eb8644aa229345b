import type { CompareDelete } from '../redis/connection';
import type { MutexKeys } from '../backend/lock-keys';
import type { HeldRelease } from '../backend/lock-store';
import { SCRIPTS } from '../redis/lua-script';
import type { NativeCommands } from '../redis/native-commands';
import type { StoreContext } from '../redis/store-context';
import { refusalOf } from '../../errors/redis-reason';

/**
 * The releases of the mutex leases this process holds. Those nobody waited for go together:
 * on one server, the releases of one event-loop turn as one call (TurnBatch); each as the
 * server's own compare-and-delete of the lock's exact value where every server has one
 * (NativeCommands) and it is alone in its turn, else as one release-plain.lua with one key
 * each. A lock a waiter of this process waits for goes straight to release.lua, with all five
 * keys, and so does one that turns out to be waited for (its value was marked, so the
 * compare-and-delete refused it, or release-plain.lua answered 2): one round trip more, for a
 * lock whose waiters are all in other processes.
 */
export class HeldReleases {
  /** Single server: the releases of one event-loop turn go out together. A Cluster's locks span slots. */
  private readonly batch: TurnBatch<HeldRelease, boolean> | undefined;

  constructor(
    private readonly ctx: StoreContext,
    private readonly native: NativeCommands | undefined,
  ) {
    if (!ctx.client.cluster) {
      this.batch = new TurnBatch(
        (item) => this.releaseMany([item]).then((done) => done[0]),
        (items) => this.releaseMany(items),
      );
    }
  }

  /** LockStore.releaseHeld of the Redis store, which exposes it as it is (bound). */
  readonly release = (item: HeldRelease): Promise<boolean> =>
    this.batch ? this.batch.push(item) : this.releaseMany([item]).then((done) => done[0]);

  /** release.lua: releases the caller's lock and hands it off or wakes waiters; withdraws a place otherwise. */
  async releaseOne(keys: MutexKeys, ownerToken: string): Promise<boolean> {
    const reply = await this.ctx.client.run(SCRIPTS.release, keys.releaseKeys, [ownerToken, this.ctx.publishCommand]);
    return Number(reply) === 1;
  }

  private async releaseMany(items: readonly HeldRelease[]): Promise<boolean[]> {
    const done = new Array<Promise<boolean>>(items.length);
    const plain: number[] = [];
    items.forEach((item, i) => {
      if (item.waited) done[i] = this.releaseOne(item.keys, item.ownerToken);
      else plain.push(i);
    });
    if (plain.length > 0) {
      const sent = this.releasePlain(plain.map((i) => items[i]));
      plain.forEach((i, j) => {
        done[i] = sent.then((replies) => {
          const reply = replies[j];
          return reply === 2 ? this.releaseOne(items[i].keys, items[i].ownerToken) : reply === 1;
        });
      });
    }
    return Promise.all(done);
  }

  /** Per lock: 1 released, 0 not ours, 2 maybe waited for (release.lua decides). */
  private async releasePlain(items: readonly HeldRelease[]): Promise<number[]> {
    // One release: the server's own command, where it has one. Several in one turn: still one
    // script call, which costs the client less than a command each (64 flows on Valkey 9: 80k
    // cycles/s with the script against 66k with a pipeline of DELIFEQ, measured A/B).
    const native: CompareDelete | undefined = items.length === 1 ? this.native?.compareDelete : undefined;
    if (native) {
      const [item] = items;
      try {
        // Refused: marked waited for, or no longer ours; release.lua tells which.
        return [(await this.ctx.client.compareDelete(native, item.keys.lock, this.holderValue(item))) ? 1 : 2];
      } catch (err) {
        // A server without the command after all (a failover to an older one): the script,
        // from now until the commands are looked up again. A user the ACL does not let run it
        // (the least-privilege rule of a Redis before 8.4 carried over): the script, which it
        // may run. A slot being moved: the script, which follows it. Anything else is a failed
        // release.
        const message = err instanceof Error ? err.message : '';
        const denied = refusalOf(err)?.kind === 'command';
        if (!denied && !/unknown command|^(MOVED|ASK) /i.test(message)) throw err;
        if (denied) this.native?.denied();
        else if (/unknown command/i.test(message)) this.native?.refused();
      }
    }
    // One lock answers a number, several a list (release-plain.lua).
    const reply = await this.ctx.client.run(
      SCRIPTS.releasePlain,
      items.map((i) => i.keys.lock),
      items.map((i) => i.ownerToken),
    );
    return (Array.isArray(reply) ? reply : [reply]).map(Number);
  }

  /** The value a lock holds while `item`'s holder has it and nobody waits: "owner|fence|instance" (acquire.lua). */
  private holderValue(item: HeldRelease): string {
    return `${item.ownerToken}|${item.fence ?? ''}|${this.ctx.instanceId}`;
  }
}

/**
 * Most calls one batch carries. Smaller batches let Redis work on one while the client
 * handles the replies of the one before; one batch for a whole turn puts them in lock-step.
 * Measured with 64 flows on one server: 64 per batch, 0.9-1.2x redis-semaphore's throughput,
 * with the client idle 40% of the time; 8 to 32 per batch, 1.5-2x.
 */
const MAX_BATCH = 16;

interface Pending<T, R> {
  readonly item: T;
  resolve(reply: R): void;
  reject(err: unknown): void;
}

/**
 * Collects the calls that concurrent flows make in one turn of the event loop and sends
 * them as one: with many flows, the client's cost per Redis command (not Redis) sets the
 * pace, and one script call for 20 locks costs the client about what one command costs. A
 * call made alone in its turn goes its own way (`one`), so a serial caller pays nothing.
 */
class TurnBatch<T, R> {
  private pending: Pending<T, R>[] = [];

  constructor(
    private readonly one: (item: T) => Promise<R>,
    private readonly many: (items: readonly T[]) => Promise<R[]>,
  ) {}

  push(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      // After this turn's promise callbacks: every flow woken in the turn has asked by then.
      if (this.pending.length === 0) process.nextTick(this.flush);
      this.pending.push({ item, resolve, reject });
    });
  }

  private readonly flush = (): void => {
    const all = this.pending;
    this.pending = [];
    for (let i = 0; i < all.length; i += MAX_BATCH) {
      const part = all.slice(i, i + MAX_BATCH);
      const sent = part.length === 1 ? this.one(part[0].item).then((r) => [r]) : this.many(part.map((p) => p.item));
      sent.then(
        (replies) => part.forEach((p, j) => p.resolve(replies[j])),
        (err: unknown) => part.forEach((p) => p.reject(err)),
      );
    }
  };
}
