import { LockTimeoutError } from '../../errors';
import type { LeaseHandle } from '../lease/lease';
import type { LockHandle } from '../lease/lock-handle';
import type { Semaphore } from '../semaphore/semaphore';
import type { PermitOptions, SemaphoreOptions } from '../semaphore/semaphore-options';
import type { LeaseKind } from '../backend/lock-store';
import type { AcquireOptions, RwAcquireOptions } from './options';

/** What taking several locks asks of the engine. */
export interface MultiLockHost {
  acquire(key: string, options?: AcquireOptions): Promise<LockHandle>;
  tryAcquire(key: string, options?: AcquireOptions): Promise<LockHandle | null>;
  acquireRead(key: string, options?: RwAcquireOptions): Promise<LockHandle>;
  acquireWrite(key: string, options?: RwAcquireOptions): Promise<LockHandle>;
  semaphore(key: string, options: SemaphoreOptions): Semaphore;
  releaseAll(handles: readonly LockHandle[]): Promise<void>;
  /** Reports a call skipped because `key` was busy (event and log line). */
  skipped(key: string, options: AcquireOptions): Promise<void>;
}

/**
 * Takes several locks one at a time, in the order given (callers sort them, so two calls
 * never wait on each other crosswise). On any failure it releases what it took. With
 * `busy: 'skip'` a held key yields `null`; with `'throw'` it fails at once with
 * LockTimeoutError.
 */
export async function acquireAll(
  host: MultiLockHost,
  keys: readonly string[],
  options: AcquireOptions,
  busy: 'wait' | 'throw' | 'skip',
  kind: LeaseKind,
): Promise<LeaseHandle[] | null> {
  const opts = busy === 'wait' ? options : { ...options, waitMs: 0 };
  const taken: LeaseHandle[] = [];
  try {
    for (const key of keys) {
      const handle = await acquireKind(host, key, opts, kind, busy === 'skip');
      if (!handle) {
        await host.releaseAll(taken);
        await host.skipped(key, options);
        return null;
      }
      taken.push(handle as LeaseHandle);
    }
    return taken;
  } catch (err) {
    await host.releaseAll(taken);
    throw err;
  }
}

function acquireKind(
  host: MultiLockHost,
  key: string,
  options: AcquireOptions,
  kind: LeaseKind,
  once: boolean,
): Promise<LockHandle | null> {
  if (kind === 'mutex') return once ? host.tryAcquire(key, options) : host.acquire(key, options);
  if (kind === 'permit') {
    // A decorator's options carry the semaphore's limit as `permits`; each call takes one.
    const { permits, ...rest } = options as PermitOptions & SemaphoreOptions;
    const semaphore = host.semaphore(key, { permits });
    return once ? semaphore.tryAcquire(rest) : semaphore.acquire(rest);
  }
  const rw = kind === 'read' ? host.acquireRead(key, options) : host.acquireWrite(key, options);
  if (!once) return rw;
  return rw.catch((err: unknown) => {
    if (err instanceof LockTimeoutError) return null;
    throw err;
  });
}
