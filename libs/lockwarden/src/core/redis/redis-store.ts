import { renewLeases } from './renewals';
import { probeServers } from './health-probe';
import { forceUnlockKey, inspectLock } from './inspect';
import { inspectSemaphore } from './sem-inspect';
import type { LockInfo, SemaphoreInfo, ServerProbe } from '../backend/lock-info';
import type { MutexKeys, RwKeys, SemKeys } from '../backend/lock-keys';
import type { RedisConnection } from './connection';
import type { ReplicaAck } from './replica-ack';
import { SCRIPTS } from './lua-script';
import type { LuaScript } from './lua-script';
import { TurnBatch } from './turn-batch';
import { NativeCommands } from './native-commands';
import { BUSY_FOR_UNKNOWN, UNMINTED } from '../backend/lock-store';
import type {
  LockStore,
  PermitHandOff,
  RenewItem,
  StoreAcquire,
  StoreRwAcquire,
  StoreSemAcquire,
} from '../backend/lock-store';

/** How often an acquisition is retried when too few replicas acknowledged it (replicaAck). */
const ACK_ATTEMPTS = 3;

/** A mutex lease to release, and whether a waiter of this process is known to wait for it. */
interface HeldRelease {
  readonly keys: MutexKeys;
  readonly ownerToken: string;
  readonly waited: boolean;
  /** The lease's fencing token, when minted: with the owner token, what the lock's value is. */
  readonly fence: number | undefined;
}

export class RedisLockStore implements LockStore {
  /** Cluster: releases use sharded pub/sub. */
  private readonly publishCommand: 'publish' | 'spublish';
  readonly readWrite = true;
  readonly semaphores = true;
  /** Single server: the releases of one event-loop turn go out together (release-plain.lua). */
  private readonly releases: TurnBatch<HeldRelease, boolean> | undefined;
  /** The server's own commands the store may use instead of a script (none for a quorum's nodes). */
  private readonly native: NativeCommands | undefined;

  constructor(
    readonly client: RedisConnection,
    private readonly instanceId: string,
    private readonly ack?: ReplicaAck,
    /**
     * Whether an uncontended first attempt may be a plain `SET NX PX` whose token is minted on
     * first read. Off for a quorum's nodes, whose grant must carry each node's token.
     */
    private readonly plainGrants = true,
  ) {
    this.publishCommand = client.cluster ? 'spublish' : 'publish';
    this.native = plainGrants ? new NativeCommands(client) : undefined;
    if (!client.cluster) {
      this.releases = new TurnBatch(
        (item) => this.releaseHeldMany([item]).then((done) => done[0]),
        (items) => this.releaseHeldMany(items),
      );
    }
  }

  /** Up to ACK_ATTEMPTS grants, each waiting for its replicas, and a give-back between. */
  get attemptMs(): number {
    return this.ack ? ACK_ATTEMPTS * this.ack.timeoutMs : 0;
  }

  /**
   * The queue hands a lock over inside the releaser's script, with no WAIT by
   * the new holder; under replicaAck every grant must be acknowledged, so the
   * queue (fair mode, and hand-offs to waiters) is off.
   */
  get fairQueue(): boolean {
    return this.ack === undefined;
  }

  async acquire(req: StoreAcquire): Promise<number> {
    // A first attempt is most likely uncontended: one native SET NX PX, no script and no
    // counter. Its token is minted when first read (mint). When it finds the lock busy, the
    // acquire loop tries again with acquire.lua, which marks the lock waited for. Sending that
    // script from here instead would put a second grant on the wire after any withdrawal the
    // loop sent meanwhile (an abort): an attempt must be one call.
    if (this.plainGrants && !this.ack && !req.fair && !req.waited && !req.fenced) {
      const set = await this.client.setNxPx(req.keys.lock, `${req.ownerToken}||${this.instanceId}`, req.leaseMs);
      return set ? UNMINTED : BUSY_FOR_UNKNOWN;
    }
    const plain = [req.ownerToken, req.leaseMs, this.instanceId];
    // A plain attempt sends two keys and three arguments: the fewer bytes and Lua table
    // entries per call, the cheaper the call on both sides.
    const args = req.fair
      ? [...plain, req.waited ? 'w' : '', req.waiterId, req.placeMs, req.handoffMs, req.inbox, req.seq]
      : req.waited
        ? [...plain, 'w']
        : plain;
    const keys = req.fair ? req.keys.acquireKeys : req.keys.plainAcquireKeys;
    return this.acknowledged(
      () => this.run(SCRIPTS.acquire, keys, args),
      req.keys.lock,
      () => this.release(req.keys, req.ownerToken),
    );
  }

  async mint(keys: MutexKeys, ownerToken: string): Promise<number> {
    return Number(await this.run(SCRIPTS.fenceMint, [keys.lock, keys.fence], [ownerToken]));
  }

  release(keys: MutexKeys, ownerToken: string): Promise<boolean> {
    return this.releaseOne(keys, ownerToken);
  }

  releaseHeld(keys: MutexKeys, ownerToken: string, waited: boolean, fence?: number): Promise<boolean> {
    const item = { keys, ownerToken, waited, fence };
    return this.releases ? this.releases.push(item) : this.releaseHeldMany([item]).then((done) => done[0]);
  }

  /**
   * Releases of leases this process holds. Those nobody waited for go together: as the
   * server's own compare-and-delete of each lock's exact value where every server has one
   * (NativeCommands), else as one release-plain.lua with one key each. A lock a waiter of this
   * process waits for goes straight to release.lua, with all five keys, and so does one that
   * turns out to be waited for (its value was marked, so the compare-and-delete refused it, or
   * release-plain.lua answered 2): one round trip more, for a lock whose waiters are all in
   * other processes.
   */
  private async releaseHeldMany(items: readonly HeldRelease[]): Promise<boolean[]> {
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
    const native = items.length === 1 ? this.native?.compareDelete : undefined;
    if (native) {
      const [item] = items;
      try {
        // Refused: marked waited for, or no longer ours; release.lua tells which.
        return [(await this.client.compareDelete(native, item.keys.lock, this.holderValue(item))) ? 1 : 2];
      } catch (err) {
        // A server without the command after all (a failover to an older one): the script,
        // from now until the commands are looked up again. A slot being moved: the script,
        // which follows it. Anything else is a failed release.
        const message = err instanceof Error ? err.message : '';
        if (!/unknown command|^(MOVED|ASK) /i.test(message)) throw err;
        if (/unknown command/i.test(message)) this.native?.refused();
      }
    }
    // One lock answers a number, several a list (release-plain.lua).
    const reply = await this.run(
      SCRIPTS.releasePlain,
      items.map((i) => i.keys.lock),
      items.map((i) => i.ownerToken),
    );
    return (Array.isArray(reply) ? reply : [reply]).map(Number);
  }

  /** The value a lock holds while `item`'s holder has it and nobody waits: "owner|fence|instance" (acquire.lua). */
  private holderValue(item: HeldRelease): string {
    return `${item.ownerToken}|${item.fence ?? ''}|${this.instanceId}`;
  }

  private async releaseOne(keys: MutexKeys, ownerToken: string): Promise<boolean> {
    const reply = await this.run(SCRIPTS.release, keys.releaseKeys, [ownerToken, this.publishCommand]);
    return Number(reply) === 1;
  }

  /** Records the fencing token a quorum granted on this node (see fence-raise.lua). */
  async raiseFence(keys: MutexKeys, ownerToken: string, fencingToken: number): Promise<boolean> {
    const reply = await this.run(SCRIPTS.fenceRaise, [keys.lock, keys.fence], [ownerToken, fencingToken]);
    return Number(reply) === 1;
  }

  clockDriftMs(): number {
    return 0;
  }

  inspect(prefix: string, key: string): Promise<LockInfo> {
    return inspectLock(this.client, prefix, key);
  }

  forceUnlock(prefix: string, key: string): Promise<boolean> {
    return forceUnlockKey(this.client, prefix, key);
  }

  probe(timeoutMs: number): Promise<ServerProbe> {
    return probeServers([this.client], timeoutMs);
  }

  async rwAcquire(req: StoreRwAcquire): Promise<number> {
    const read = req.kind === 'read';
    const plain = [
      req.ownerToken,
      req.leaseMs,
      this.instanceId,
      read ? 'r' : 'w',
      read ? req.heldWriteToken : req.placeMs,
      req.writerPreference ? '1' : '0',
    ];
    const q = req.queued;
    const args = q ? [...plain, q.waiterId, req.placeMs, req.handoffMs, q.inbox, q.seq] : plain;
    const reply = await this.run(SCRIPTS.rwAcquire, q ? req.keys.queuedAcquireKeys : req.keys.acquireKeys, args);
    return Number(reply);
  }

  async rwRelease(keys: RwKeys, ownerToken: string, kind: 'read' | 'write'): Promise<boolean> {
    const reply = await this.run(SCRIPTS.rwRelease, keys.releaseKeys, [
      ownerToken,
      kind === 'read' ? 'r' : 'w',
      this.publishCommand,
    ]);
    return Number(reply) === 1;
  }

  semAcquire(req: StoreSemAcquire): Promise<number> {
    const plain = [req.ownerToken, req.leaseMs, this.instanceId, req.permits, req.initialLimit];
    const q = req.queued;
    const args = q ? [...plain, q.waiterId, req.placeMs, req.handoffMs, q.inbox, q.seq] : plain;
    const keys = q ? req.keys.queuedAcquireKeys : req.keys.acquireKeys;
    return this.acknowledged(
      () => this.run(SCRIPTS.semAcquire, keys, args),
      req.keys.lock,
      () => this.semRelease(req.keys, req.ownerToken),
    );
  }

  async semRelease(keys: SemKeys, ownerToken: string): Promise<boolean> {
    const reply = (await this.run(SCRIPTS.semRelease, keys.releaseKeys, [ownerToken, this.publishCommand])) as number[];
    return Number(reply[0]) === 1;
  }

  get permitHandOff(): boolean {
    return !this.ack;
  }

  /** As for permits: a hand-off in the release script is a grant no replica acknowledged. */
  get rwQueue(): boolean {
    return !this.ack;
  }

  async semHandOff(
    keys: SemKeys,
    ownerToken: string,
    to: PermitHandOff,
  ): Promise<{ released: boolean; fencingToken: number }> {
    const reply = (await this.run(SCRIPTS.semRelease, keys.releaseKeys, [
      ownerToken,
      this.publishCommand,
      to.ownerToken,
      to.permits,
      to.leaseMs,
      this.instanceId,
    ])) as [number, number];
    return { released: Number(reply[0]) === 1, fencingToken: Number(reply[1]) };
  }

  semInspect(keys: SemKeys, key: string): Promise<SemaphoreInfo> {
    return inspectSemaphore(this.client, keys, key);
  }

  async semLimit(keys: SemKeys, limit: number): Promise<number> {
    const reply = await this.run(SCRIPTS.semLimit, keys.limitKeys, [limit, this.publishCommand]);
    if (this.ack) {
      const short = await this.ack.check([keys.limit]);
      if (short) throw short;
    }
    return Number(reply);
  }

  /** Every script call of the store goes through here. */
  private run(script: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    return this.client.run(script, keys, args);
  }

  /**
   * A grant (a fencing token >= 0), acknowledged by enough replicas under replicaAck.
   * When too few have it, a failover now could lose it: give it back, and try again.
   */
  private async acknowledged(
    grant: () => Promise<unknown>,
    redisKey: string,
    giveBack: () => Promise<unknown>,
  ): Promise<number> {
    for (let attempt = 1; ; attempt++) {
      const fencingToken = Number(await grant());
      if (fencingToken < 0 || !this.ack) return fencingToken;
      const short = await this.ack.check([redisKey]);
      if (!short) return fencingToken;
      await giveBack();
      if (attempt >= ACK_ATTEMPTS) throw short;
    }
  }

  async renew(items: readonly RenewItem[]): Promise<boolean[]> {
    const results = await renewLeases(this.client, items, (script, keys, args) => this.run(script, keys, args));
    if (this.ack && items.length > 0) {
      // A renewal a failover loses would shorten the lease behind the holder's back.
      const short = await this.ack.check(items.map((item) => item.redisKey));
      if (short) throw short;
    }
    return results;
  }
}
