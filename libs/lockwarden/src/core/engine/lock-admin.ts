import { LockBackendError } from '../../errors';
import type { Watchdog } from '../lease/watchdog';
import type { LockHealthReport } from '../backend/lock-info';
import type { LockInfo } from '../backend/lock-info';
import type { LockSurvey, SurveyOptions } from '../backend/lock-survey';
import type { EvictionReport } from '../backend/server-eviction';
import type { OpenedBackend } from '../backend/lock-backend';
import type { LockStore } from '../backend/lock-store';
import type { HeldLocks } from './held-locks';
import { checkKey } from '../backend/lock-keys';

/** What operators ask of the locks: who holds one, clearing a stuck one, and health. */
export class LockAdmin {
  constructor(
    private readonly store: LockStore,
    private readonly keyPrefix: string,
    private readonly watchdog: Watchdog,
    private readonly held: HeldLocks,
    /** What surveys the locks; the in-memory backend does not. */
    private readonly backend: Pick<OpenedBackend, 'survey' | 'eviction'>,
  ) {}

  /**
   * One bounded look at every lock, semaphore and leadership under the prefix (see the
   * Redis backend's `surveyLocks` for its cost). An in-memory backend has nothing to scan:
   * an empty survey.
   */
  async survey(options: SurveyOptions): Promise<LockSurvey> {
    if (!this.backend.survey)
      return { at: Date.now(), locks: [], semaphores: [], leaderships: [], scanned: 0, keys: 0, cursor: null };
    try {
      return await this.backend.survey(this.keyPrefix, options);
    } catch (err) {
      throw new LockBackendError(undefined, 'survey the locks', err);
    }
  }

  /**
   * Who holds `key` (as a mutex or a read/write lock), for how long, with which fencing
   * token, and how many waiters are queued. Never exposes owner tokens. With a quorum
   * the lock counts as held when a majority of nodes hold it.
   */
  async inspect(key: string): Promise<LockInfo> {
    const k = checkKey(key);
    try {
      return await this.store.inspect(this.keyPrefix, k);
    } catch (err) {
      throw new LockBackendError(k, 'inspect', err);
    }
  }

  /**
   * Dangerous: deletes `key`'s lock (mutex and read/write) whoever holds it, and wakes its
   * waiters. Nothing is aborted remotely: holders find out at their next renewal, and until
   * then two holders may run at once. Resolves true when a lock was held.
   */
  async forceUnlock(key: string): Promise<boolean> {
    const k = checkKey(key);
    try {
      return await this.store.forceUnlock(this.keyPrefix, k);
    } catch (err) {
      throw new LockBackendError(k, 'force-unlock', err);
    }
  }

  /** Reachability, script cache and watchdog lag, for health checks. Never throws. */
  async health(timeoutMs: number): Promise<LockHealthReport> {
    const [probe, eviction] = await Promise.all([this.store.probe(timeoutMs), this.eviction(timeoutMs)]);
    return {
      ...probe,
      ...eviction,
      watchdogLagMs: Math.round(this.watchdog.lagMs),
      heldLocks: this.held.size,
    };
  }

  /** The eviction fields of the health report (none evicts in memory). Never throws. */
  eviction(timeoutMs: number): Promise<EvictionReport> {
    return this.backend.eviction?.report(timeoutMs) ?? Promise.resolve({ keysMayBeEvicted: false });
  }

  /** Who holds a lock that was skipped: the instance id stored beside it, never the owner token. */
  async holderOf(key: string): Promise<string> {
    try {
      const holder = (await this.store.inspect(this.keyPrefix, key)).holders[0]?.instanceId;
      return holder ?? 'an instance that just released it';
    } catch {
      return 'another instance';
    }
  }
}
