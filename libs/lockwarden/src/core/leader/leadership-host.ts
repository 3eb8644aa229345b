import type { LockInfo } from '../backend/lock-info';
import type { TermLogs } from '../backend/term-log';
import type { LockHandle } from '../lease/lock-handle';
import type { AcquireOptions } from '../options/options';
import type { ResolvedEngineOptions } from '../options/engine-options';

/**
 * What leaderships need of the engine they are built on (a leadership is a mutex): LockEngine
 * is one. Declared here, as a semaphore's PermitHost and a scheduled job's JobHost are, so that
 * this room never imports the engine, and the backend that keeps the terms can sit below both.
 */
export interface LeadershipHost {
  readonly options: Pick<ResolvedEngineOptions, 'instanceId' | 'logger' | 'leaseMs' | 'keyPrefix' | 'shutdownGraceMs'>;
  /** True once shutdown began: a campaign then stops. */
  readonly shuttingDown: boolean;
  acquire(key: string, options?: AcquireOptions): Promise<LockHandle>;
  inspect(key: string): Promise<LockInfo>;
  /** The term logs of one registry; none when the backend keeps none (they are kept in this process then). */
  openTermLogs(): TermLogs | undefined;
}
