import { LockAbortedError } from '../../errors';

/** `work`, or LockAbortedError as soon as `signal` fires. */
export function raceSignal(work: Promise<void>, signal: AbortSignal | undefined, key: string): Promise<void> {
  if (!signal) return work;
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => reject(new LockAbortedError(key, signal.reason));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

export function whenAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

export async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const result = await Promise.race([work.then(() => true as const), timeout]);
  clearTimeout(timer);
  return result;
}
