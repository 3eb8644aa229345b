import type { Watchdog } from '../lease/watchdog';
import type { OpenedBackend } from '../backend/lock-backend';
import type { Abortable } from '../wait/loop-context';
import type { HeldLocks } from './held-locks';
import type { LockLogger } from '../observe/logger';

const SHUTTING_DOWN = new Error('the lock service is shutting down');

/**
 * An engine's shutdown, in two halves: drain (refuse new acquires, cancel the pending ones,
 * abort held locks' signals, wait for their work and for scheduled ticks being handled),
 * then close (stop the watchdog, close what the backend opened).
 */
export class EngineShutdown {
  /** The acquires waiting now: shutdown cancels them. */
  readonly gates = new Set<Abortable>();
  private readonly stopping = new AbortController();
  /** Scheduled ticks being handled: shutdown waits for them before it closes Redis (see JobHost.track). */
  private readonly tracked = new Set<Promise<void>>();
  private closing = false;
  private drained: Promise<void> | undefined;
  private closed: Promise<void> | undefined;

  constructor(
    private readonly held: HeldLocks,
    private readonly watchdog: Watchdog,
    private readonly backend: OpenedBackend,
    private readonly logger: LockLogger,
  ) {}

  /** Fires when shutdown begins. */
  get signal(): AbortSignal {
    return this.stopping.signal;
  }

  /** True once shutdown began. */
  get started(): boolean {
    return this.closing;
  }

  /** Keeps `work` (a scheduled tick being handled) in view until it settles; returns it. */
  track<T>(work: Promise<T>): Promise<T> {
    const settled = work.then(
      () => undefined,
      () => undefined,
    );
    this.tracked.add(settled);
    void settled.then(() => this.tracked.delete(settled));
    return work;
  }

  drain(graceMs: number): Promise<void> {
    this.closing = true;
    this.stopping.abort(SHUTTING_DOWN);
    for (const gate of this.gates) gate.abort(SHUTTING_DOWN);
    this.drained ??= this.drainWithin(graceMs);
    return this.drained;
  }

  close(graceMs: number): Promise<void> {
    this.closed ??= this.shutdown(graceMs);
    return this.closed;
  }

  /** Held locks' work, then the scheduled ticks still being handled (a hand-off), within one grace. */
  private async drainWithin(graceMs: number): Promise<void> {
    const until = performance.now() + graceMs;
    const keys = this.held.interruptAll();
    if (keys.length > 0) {
      // Said now, not only if the grace runs out: a test runner's hook timeout may come first.
      const message =
        `Shutting down: waiting up to ${graceMs} ms (shutdownGraceMs) for the work holding ${keys.length} ` +
        `lock(s) (${quoted(keys)}) to end; their signals are aborted.`;
      if (this.logger.log) this.logger.log(message);
      else this.logger.debug(message);
    }
    await within(this.held.whenIdle(), graceMs);
    const left = until - performance.now();
    if (this.tracked.size === 0 || left <= 0) return;
    await within(Promise.all(this.tracked), left);
  }

  private async shutdown(graceMs: number): Promise<void> {
    await this.drain(graceMs);
    this.watchdog.stop();
    const abandoned = this.held.abandon();
    if (abandoned.length > 0) {
      this.logger.warn(
        `Shut down with ${abandoned.length} lock(s) still held by running work (${quoted(abandoned)}). They were not ` +
          'released, because that work may still act on them: they expire with their lease, as after a crash.',
      );
    }
    await this.backend.close();
  }
}

/** Resolves when `work` settles, or after `ms`, whichever comes first. */
async function within(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

function quoted(keys: readonly string[]): string {
  return keys.map((k) => `"${k}"`).join(', ');
}
