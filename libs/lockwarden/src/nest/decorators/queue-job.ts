/** What a BullMQ job offers to put itself off (`Job.moveToDelayed`, a public method). */
interface DelayableJob {
  moveToDelayed(timestamp: number, token?: string): Promise<void>;
}

/**
 * The job a queue consumer was called with, when the call looks like a BullMQ processor's
 * `process(job, token)`: a job that can be put off, and the worker's lock token for it.
 */
export function queueJobOf(args: readonly unknown[]): { job: DelayableJob; token: string } | undefined {
  const [job, token] = args;
  if (typeof token !== 'string' || typeof (job as Partial<DelayableJob> | null)?.moveToDelayed !== 'function') {
    return undefined;
  }
  return { job: job as DelayableJob, token };
}

/**
 * What BullMQ's worker takes as "this job was put off, not failed": it matches the error's
 * name, so the library need not load bullmq to throw it.
 */
class JobPutOffError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DelayedError';
  }
}

/**
 * A queue consumer's answer to a busy lock (or to a wait the app's shutdown cut short), as a
 * route's is a 409 with Retry-After: the job goes back to the queue, delayed by the retry
 * hint, without spending one of its attempts, and the worker is told so (it logs no failure
 * and runs no backoff).
 */
export async function putOff(
  target: { job: DelayableJob; token: string },
  retryAfterMs: number,
  key: string,
): Promise<never> {
  await target.job.moveToDelayed(Date.now() + retryAfterMs, target.token);
  throw new JobPutOffError(`the lock "${key}" was not to be had: the job was put off by ${retryAfterMs} ms`);
}
