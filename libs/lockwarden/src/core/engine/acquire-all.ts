import { LockTimeoutError } from '../../errors';
import type { LeaseHandle } from '../lease/lease';
import type { LockRequest } from './lock-request';
import type { AcquireOptions, PermitOptions, RwAcquireOptions } from '../options/options';

/** What taking several locks asks of the engine: its paths that give the internal handle. */
export interface MultiLockHost {
  acquire(key: string, options: AcquireOptions): Promise<LeaseHandle>;
  tryAcquire(key: string, options: AcquireOptions): Promise<LeaseHandle | null>;
  acquireRead(key: string, options: RwAcquireOptions): Promise<LeaseHandle>;
  acquireWrite(key: string, options: RwAcquireOptions): Promise<LeaseHandle>;
  /** One permit of the semaphore `key` whose limit is `limit`; `once`: one attempt, null when busy. */
  permit(key: string, limit: number, options: PermitOptions, once: boolean): Promise<LeaseHandle | null>;
  releaseAll(handles: readonly LeaseHandle[]): Promise<void>;
  /** Reports a call skipped because `key` was busy (event and log line). */
  skipped(key: string, name: string | undefined): Promise<void>;
}

/**
 * Takes several locks one at a time, in the order given (callers sort them, so two calls
 * never wait on each other crosswise). On any failure it releases what it took. With
 * `onBusy: 'skip'` a held key yields `null`; with `'throw'` it fails at once with
 * LockTimeoutError.
 */
export async function acquireAll(
  host: MultiLockHost,
  keys: readonly string[],
  request: LockRequest,
  onBusy: 'wait' | 'throw' | 'skip',
): Promise<LeaseHandle[] | null> {
  const taken: LeaseHandle[] = [];
  try {
    for (const key of keys) {
      const handle = await acquireOne(host, key, request, onBusy);
      if (!handle) {
        await host.releaseAll(taken);
        await host.skipped(key, request.options.name);
        return null;
      }
      taken.push(handle);
    }
    return taken;
  } catch (err) {
    await host.releaseAll(taken);
    throw err;
  }
}

function acquireOne(
  host: MultiLockHost,
  key: string,
  request: LockRequest,
  onBusy: 'wait' | 'throw' | 'skip',
): Promise<LeaseHandle | null> {
  const once = onBusy === 'skip';
  switch (request.kind) {
    case 'mutex': {
      const options = budget(request.options, onBusy);
      return once ? host.tryAcquire(key, options) : host.acquire(key, options);
    }
    case 'permit':
      return host.permit(key, request.limit, budget(request.options, onBusy), once);
    case 'read':
    case 'write': {
      const options = budget(request.options, onBusy);
      const rw = request.kind === 'read' ? host.acquireRead(key, options) : host.acquireWrite(key, options);
      if (!once) return rw;
      return rw.catch((err: unknown) => {
        if (err instanceof LockTimeoutError) return null;
        throw err;
      });
    }
  }
}

/** The options with no wait unless the call waits when busy. */
function budget<O extends { waitMs?: number }>(options: O, onBusy: 'wait' | 'throw' | 'skip'): O {
  return onBusy === 'wait' ? options : { ...options, waitMs: 0 };
}
