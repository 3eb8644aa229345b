/** What a queue job (BullMQ's `Job`) offers to put itself off (`Job.moveToDelayed`, a public method). */
interface DelayableQueueJob {
  moveToDelayed(timestamp: number, token?: string): Promise<void>;
}

/**
 * The queue job a queue consumer was called with, when the call looks like a BullMQ
 * processor's `process(job, token)`: a queue job that can be put off, and the worker's lock
 * token for it.
 */
export function queueJobOf(args: readonly unknown[]): { queueJob: DelayableQueueJob; token: string } | undefined {
  const [queueJob, token] = args;
  if (
    typeof token !== 'string' ||
    typeof (queueJob as Partial<DelayableQueueJob> | null)?.moveToDelayed !== 'function'
  ) {
    return undefined;
  }
  return { queueJob: queueJob as DelayableQueueJob, token };
}

/**
 * What BullMQ's worker takes as "this queue job was put off, not failed": it matches the
 * error's name, so the library need not load bullmq to throw it.
 */
class QueueJobPutOffError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DelayedError';
  }
}

/**
 * A queue consumer's answer to a busy lock (or to a wait the app's shutdown cut short), as a
 * route's is a 409 with Retry-After: the queue job goes back to the queue, delayed by the retry
 * hint, without spending one of its attempts, and the worker is told so (it logs no failure
 * and runs no backoff).
 */
export async function putOff(
  target: { queueJob: DelayableQueueJob; token: string },
  retryAfterMs: number,
  key: string,
): Promise<never> {
  await target.queueJob.moveToDelayed(Date.now() + retryAfterMs, target.token);
  throw new QueueJobPutOffError(`the lock "${key}" was not to be had: the queue job was put off by ${retryAfterMs} ms`);
}
