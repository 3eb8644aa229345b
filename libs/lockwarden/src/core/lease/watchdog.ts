import { quoteKey } from '../../errors/key-text';
import { redisReason } from '../../errors/redis-reason';
import { tellRefusal } from '../../errors/refusal-notice';
import type { LockEvent } from '../observe/events';
import type { Lease } from './lease';
import type { LockLogger } from '../observe/logger';
import type { LockStore, RenewItem } from '../backend/lock-store';

/** A lease with less than this left to its end is not looked at by `check`: it ends by itself sooner than an answer. */
const MIN_CHECK_MS = 10;

/** The renewal of `lease` sent at `sentAt`: its lease, never past its maxHoldMs cap (then marked capped). */
function renewalOf(lease: Lease, sentAt: number): RenewItem {
  const leaseMs = lease.renewalMs(sentAt);
  if (lease.renew && leaseMs < lease.leaseMs) lease.capped = true;
  return { redisKey: lease.keys.lock, ownerToken: lease.ownerToken, leaseMs, kind: lease.kind };
}

/**
 * The watchdog's engine: one timer for every held lock, never one per lock.
 *
 * Each firing renews, in one batched script call per 500 keys, every lease
 * whose renewal falls due within the next sixth of its lease, so leases taken
 * at different moments share rounds. Renewal is scheduled from the confirmed
 * acquisition, renews only while the token still owns the key, and retries
 * failures until the lease's safety margin is reached; then the lease's
 * signal aborts, before any other client can take the key.
 */
export class Watchdog {
  private readonly leases = new Set<Lease>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private stopped = false;
  /** How late the last firing ran compared with when it was due, in ms. */
  lastLagMs = 0;
  rounds = 0;
  /** Leases renewed so far (each renewal of each lease once). */
  renewals = 0;

  /** Told of each lease once it is lost, after it is marked: the held locks stop counting it (HeldLocks). */
  onLost: ((lease: Lease) => void) | undefined;

  constructor(
    private readonly store: LockStore,
    private readonly logger: LockLogger,
    private readonly emit: ((event: LockEvent) => void) | undefined,
  ) {}

  get size(): number {
    return this.leases.size;
  }

  /**
   * How late the watchdog is now: the last round's lateness, or how overdue the
   * next round already is, whichever is more. 0 while no lock is held, since a
   * late round long ago says nothing about leases that no longer exist.
   */
  get lagMs(): number {
    if (this.leases.size === 0) return 0;
    const overdue = this.timerAt === Infinity ? 0 : performance.now() - this.timerAt;
    return Math.max(this.lastLagMs, overdue, 0);
  }

  track(lease: Lease): void {
    if (this.stopped) return;
    lease.overdue = this.overdue;
    this.leases.add(lease);
    const at = Math.min(lease.nextRenewAt, lease.abortAt);
    if (at < this.timerAt) this.arm(at);
  }

  untrack(lease: Lease): void {
    lease.overdue = undefined;
    this.leases.delete(lease);
    // The timer stays armed when the last lease goes (it is unref'd and fires harmlessly):
    // disarming and re-arming it on every acquire/release cycle cost a timer per lock.
  }

  /** Re-plans after a lease's timing changed outside a renewal round (extend()). */
  reschedule(lease: Lease): void {
    if (!lease.tracked) return;
    const at = Math.min(lease.nextRenewAt, lease.abortAt);
    if (at < this.timerAt) this.arm(at);
  }

  /**
   * Renews one lease at once, outside the rounds: a hand-off's short lease, whose renewal
   * must be on the wire before the new holder's work can hold up the event loop.
   */
  renewNow(lease: Lease): void {
    if (this.stopped || !(lease.renew || lease.extendsOnce) || lease.renewing || lease.state !== 'held') return;
    this.renew([lease], performance.now());
  }

  /** Runs the watchdog (it runs from creation; this undoes stop()). */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.rearm();
  }

  stop(): void {
    this.stopped = true;
    this.disarm();
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.fire(), Math.max(0, Math.ceil(at - performance.now())));
    this.timer.unref();
  }

  private disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private fire(): void {
    this.timer = undefined;
    const now = performance.now();
    this.lastLagMs = Math.max(0, now - this.timerAt);
    this.timerAt = Infinity;
    try {
      const due: Lease[] = [];
      const answerPending: Lease[] = [];
      for (const lease of this.leases) {
        if (lease.state !== 'held') {
          this.untrack(lease);
        } else if (now >= lease.abortAt) {
          // A renewal on the wire may have its answer waiting already: a loop held up past
          // the abort time runs timers before it reads sockets. Decide after this turn's I/O.
          if (lease.renewing) answerPending.push(lease);
          else this.expire(lease, now);
        } else if (
          (lease.renew || lease.extendsOnce) &&
          !lease.renewing &&
          lease.nextRenewAt - lease.currentLeaseMs / 6 <= now
        ) {
          if (lease.renewalMs(now) > lease.safetyMarginMs) due.push(lease);
          else lease.capped = true;
        }
      }
      if (due.length > 0) this.renew(due, now);
      if (answerPending.length > 0) setImmediate(() => this.expireUnanswered(answerPending));
    } catch (err) {
      this.logger.warn(`Lock watchdog round failed: ${String(err)}`);
    }
    this.rearm();
  }

  /**
   * Looks at `leases` in Redis now, outside the rounds, with one renewal each (a fixed lease
   * only to the end it asked for): those no longer ours there are lost, for `reason`. For a
   * moment when a key may have been dropped (evictions were seen, locked work is about to
   * answer its caller). A renewal already on the wire is no answer here: it may have been sent
   * before the key was dropped. Failing to ask is no loss (the rounds go on); resolves anyway.
   */
  async check(leases: Iterable<Lease>, reason: string): Promise<void> {
    const sentAt = performance.now();
    const asked = [...leases].filter((l) => l.state === 'held' && l.renewalMs(sentAt) >= MIN_CHECK_MS);
    if (asked.length === 0) return;
    const items = asked.map((lease) => renewalOf(lease, sentAt));
    let results: boolean[];
    try {
      results = await this.store.renew(items);
    } catch (err) {
      tellRefusal(this.logger, err);
      this.logger.debug(`Could not look at ${asked.length} held lock(s) now (${redisReason(err)}); renewals go on.`);
      return;
    }
    asked.forEach((lease, i) => {
      if (lease.state !== 'held') return;
      if (!results[i]) {
        this.untrack(lease);
        this.lost(lease, reason);
      } else if (!lease.renewing) {
        lease.confirm(sentAt, items[i].leaseMs);
        this.reschedule(lease);
      }
    });
  }

  private renew(due: Lease[], sentAt: number): void {
    this.rounds++;
    for (const lease of due) lease.renewing = true;
    const items = due.map((lease) => renewalOf(lease, sentAt));
    this.store.renew(items).then(
      (results) => {
        // Only the renewed leases moved: plan the next firing from them, not from every lease.
        let next = Infinity;
        due.forEach((lease, i) => {
          lease.renewing = false;
          if (lease.state !== 'held') return;
          if (results[i]) {
            this.renewals++;
            lease.confirm(sentAt, items[i].leaseMs);
            this.emit?.({ type: 'renewed', key: lease.key, name: lease.name, fencingToken: lease.mintedToken });
            next = Math.min(next, lease.nextRenewAt, lease.abortAt);
          } else {
            this.untrack(lease);
            this.lost(lease, 'the key is no longer ours in Redis (it expired or was deleted)');
          }
        });
        if (next < this.timerAt) this.arm(next);
      },
      (err: unknown) => {
        const retryAt = performance.now();
        let next = Infinity;
        const reason = redisReason(err);
        for (const lease of due) {
          lease.renewing = false;
          lease.nextRenewAt = retryAt + Math.min(1_000, lease.currentLeaseMs / 10);
          next = Math.min(next, lease.nextRenewAt, lease.abortAt);
          this.emit?.({
            type: 'renewFailed',
            key: lease.key,
            name: lease.name,
            fencingToken: lease.mintedToken,
            reason,
          });
        }
        // A refusal (the ACL user may not run renew.lua's commands, OOM...) is no outage: it is
        // said as what it is, once. The renewals still go on: they cannot prove the lease ours,
        // and a lease is lost only when it runs out unrenewed, as through an outage.
        tellRefusal(this.logger, err);
        this.logger.debug(`Lock renewal failed, retrying within the lease: ${reason}`);
        if (next < this.timerAt) this.arm(next);
      },
    );
  }

  /** A lease read past its abort time before the timer ran: lost now, not at the next firing. */
  private readonly overdue = (lease: Lease): void => this.expire(lease, performance.now());

  /**
   * Leases past their abort time when a round ran, with a renewal on the wire: those whose
   * renewal was not answered in this turn of the event loop are lost now. (A read of the
   * signal meanwhile already found them lost: Lease.check.)
   */
  private expireUnanswered(leases: readonly Lease[]): void {
    try {
      const now = performance.now();
      for (const lease of leases)
        if (lease.state === 'held' && lease.tracked && now >= lease.abortAt) this.expire(lease, now);
    } catch (err) {
      this.logger.warn(`Lock watchdog round failed: ${String(err)}`);
    }
  }

  private expire(lease: Lease, now: number): void {
    this.untrack(lease);
    if (lease.capped || now >= lease.maxHoldUntil - lease.safetyMarginMs) {
      this.lost(lease, 'it was held for its maxHoldMs, the longest one acquisition may be kept');
    } else if (lease.renew) {
      this.lost(lease, `its lease ran out before a renewal succeeded (safety margin ${lease.safetyMarginMs} ms)`);
    } else {
      // A fixed lease (renew: false) ends when it was asked to: nothing went wrong, so no warning. It still ends
      // as a loss (a 'lost' event, LockLostError on the signal and from withLock) because code
      // still holding it no longer has the lock, which is what the signal is for.
      const reason = `its fixed lease of ${lease.leaseMs} ms ran out (it was taken with renew: false)`;
      if (this.lost(lease, reason, false)) {
        this.logger.debug(`Lock ${quoteKey(lease.key)} expired while still held: ${reason}; its signal aborted.`);
      }
    }
  }

  /**
   * Marks a lease lost, logs it once (unless the caller reports it its own way) and emits
   * the event; false if it had already ended.
   */
  lost(lease: Lease, reason: string, log = true): boolean {
    if (!lease.lose(reason)) return false;
    this.onLost?.(lease);
    if (log) this.logger.warn(`Lock ${quoteKey(lease.key)} lost: ${reason}.`);
    this.emit?.({
      type: 'lost',
      key: lease.key,
      name: lease.name,
      fencingToken: lease.mintedToken,
      reason,
      heldMs: Math.round(performance.now() - lease.heldSince),
    });
    return true;
  }

  private rearm(): void {
    if (this.stopped) return;
    let next = Infinity;
    for (const lease of this.leases) {
      const renewable = !lease.renewing && lease.renewalMs(lease.nextRenewAt) > lease.safetyMarginMs;
      const at = renewable ? Math.min(lease.nextRenewAt, lease.abortAt) : lease.abortAt;
      if (at < next) next = at;
    }
    if (next === Infinity) this.disarm();
    else if (next !== this.timerAt) this.arm(next);
  }
}
