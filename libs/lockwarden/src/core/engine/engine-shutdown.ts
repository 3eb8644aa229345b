import type { Watchdog } from '../lease/watchdog';
import type { Topology } from '../backend/lock-backend';
import type { AcquireGate } from '../wait/acquire-loop';
import type { HeldLocks } from './held-locks';

const SHUTTING_DOWN = new Error('the lock service is shutting down');

/**
 * An engine's shutdown, in two halves: drain (refuse new acquires, cancel the pending ones,
 * abort held locks' signals, wait for their work and for scheduled ticks being handled),
 * then close (stop the watchdog, close what the backend opened).
 */
export class EngineShutdown {
  /** The acquires waiting now: shutdown cancels them. */
  readonly gates = new Set<AcquireGate>();
  private readonly stopping = new AbortController();
  /** Scheduled ticks being handled: shutdown waits for them before it closes Redis (see JobHost.track). */
  private readonly tracked = new Set<Promise<void>>();
  private closing = false;
  private drained: Promise<void> | undefined;
  private closed: Promise<void> | undefined;

  constructor(
    private readonly held: HeldLocks,
    private readonly watchdog: Watchdog,
    private readonly topology: Topology,
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

  /** Held locks' work, then the scheduled ticks still being handled (a give-back), within one grace. */
  private async drainWithin(graceMs: number): Promise<void> {
    const until = performance.now() + graceMs;
    await this.held.drain(graceMs);
    const left = until - performance.now();
    if (this.tracked.size === 0 || left <= 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(this.tracked),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, left))),
    ]);
    clearTimeout(timer);
  }

  private async shutdown(graceMs: number): Promise<void> {
    await this.drain(graceMs);
    this.watchdog.stop();
    this.held.abandon();
    await this.topology.close();
  }
}
