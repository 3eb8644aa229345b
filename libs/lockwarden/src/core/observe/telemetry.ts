import { LockAbortedError } from '../../errors';
import type { LockEvent, LockEventListener } from './events';
import { loadOtel } from './otel';
import type { Adder, Attributes, OtelApi, Span, Tracer } from './otel';

// Where the engine's lock events go: to its listeners (EventHub), and to OpenTelemetry as lock
// metrics; and the spans of acquisitions and holds.

/**
 * Listeners that come and go while the engine runs (the dashboard's, a test's), beside the
 * fixed `onEvent` given at construction and the metrics. A faulty listener never breaks a
 * lock operation.
 */
export class EventHub {
  private readonly listeners = new Set<LockEventListener>();

  /** Adds `listener`; call the returned function to remove it. */
  add(listener: LockEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  readonly emit = (event: LockEvent): void => {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // a faulty listener must not change the outcome of a lock operation
      }
    }
  };
}

/** SpanStatusCode.ERROR of @opentelemetry/api. */
const STATUS_ERROR = 2;

/** How an acquisition ended, as its span's `lock.outcome` says. */
export type AcquireOutcome = 'acquired' | 'timeout' | 'busy' | 'aborted' | 'error';

/** The lock's kind, as its span's `lock.kind` says (the engine's LockKind). */
export type SpanLockKind = 'mutex' | 'read' | 'write' | 'permit';

/** What the tracer reads of a request: never its owner token. */
export interface TracedRequest {
  readonly key: string;
  readonly name: string;
  readonly waitMs: number;
}

/** Ends a lease's `lockwarden.hold` span; the first call wins, later ones do nothing. */
export interface HoldTrace {
  /** The holder read its token, minted after the grant: the hold span records it then. */
  minted(fencingToken: number): void;
  released(): void;
  lost(reason: string): void;
}

/** What the tracer needs of a granted handle: its fencing token, and where its hold span goes. */
export interface TracedHandle {
  readonly lease: { readonly mintedToken: number | undefined; trace: HoldTrace | undefined };
}

/** Spans for the acquisitions and holds of one engine. */
export interface LockTracer {
  /**
   * Opens the `lockwarden.acquire` span of one acquisition, as a child of the span active now
   * (so call it in the caller's async context, before anything is awaited); undefined when
   * nothing records spans. The span is never made active: the watchdog timer a grant may arm
   * would keep it as the parent of every later renewal.
   */
  start(req: TracedRequest, kind: SpanLockKind): AcquireTrace | undefined;
}

/** One acquisition's span: ended once, by how the acquisition settled. */
export interface AcquireTrace {
  /** A handle (which opens its lease's `lockwarden.hold` span), or how many ms the lock stays busy. */
  settled(got: TracedHandle | number): void;
  failed(err: unknown): void;
}

/**
 * Lock spans through the OpenTelemetry API, both children of the span active where the
 * caller asked for the lock (so the hold span is the acquire's sibling, not its child, and
 * outlives it):
 * - `lockwarden.acquire`, from the ask to the grant or refusal, with `lock.name`,
 *   `lock.key`, `lock.kind`, `lock.outcome` (acquired, timeout, busy, aborted, error),
 *   `lock.waited_ms`, and `lock.fencing_token` when acquired. Only `error` sets the span's
 *   status to ERROR (with `error.type`);
 * - `lockwarden.hold`, from the grant to the release (when the holder gives the lock back,
 *   before that reaches Redis) or the loss, with `lock.name`, `lock.key`, `lock.kind`,
 *   `lock.fencing_token`, `lock.outcome` (released, lost) and, when lost, `lock.lost_reason`.
 *
 * A reentrant acquire of a lock the caller already holds makes neither span: it only counts
 * one more hold on the same lease. Returns undefined when @opentelemetry/api is not
 * installed: no span, no cost.
 */
export function otelLockTracer(): LockTracer | undefined {
  const api = loadOtel<OtelApi>();
  return api ? new OtelLockTracer(api) : undefined;
}

class OtelLockTracer implements LockTracer {
  private readonly tracer: Tracer;

  constructor(private readonly api: OtelApi) {
    this.tracer = api.trace.getTracer('lockwarden');
  }

  start(req: TracedRequest, kind: SpanLockKind): AcquireTrace | undefined {
    const trace = quietly(
      () =>
        new AcquireSpan(this.tracer, this.api.context.active(), req.waitMs, {
          'lock.name': req.name,
          'lock.key': req.key,
          'lock.kind': kind,
        }),
    );
    // With the api installed but no tracer provider registered, spans record nothing: then
    // the acquisition runs as if traces were off (no hold span).
    return trace && quietly(() => trace.recording) ? trace : undefined;
  }
}

class AcquireSpan implements AcquireTrace {
  private readonly span: Span;
  private readonly started = performance.now();

  constructor(
    private readonly tracer: Tracer,
    private readonly parent: unknown,
    private readonly waitMs: number,
    private readonly attributes: Attributes,
  ) {
    this.span = tracer.startSpan('lockwarden.acquire', { attributes }, parent);
  }

  get recording(): boolean {
    return this.span.isRecording();
  }

  settled(got: TracedHandle | number): void {
    // No wait asked for (tryAcquire, waitMs 0) is a refusal, not a wait that ran out.
    quietly(() =>
      typeof got === 'number' ? this.end(this.waitMs === 0 ? 'busy' : 'timeout') : this.granted(got.lease),
    );
  }

  private granted(lease: TracedHandle['lease']): void {
    // A token minted later, on its first read, is not known here: the hold span gets it then.
    const fence = lease.mintedToken;
    if (fence !== undefined) this.span.setAttribute('lock.fencing_token', fence);
    this.end('acquired');
    const attributes = fence === undefined ? this.attributes : { ...this.attributes, 'lock.fencing_token': fence };
    lease.trace = new HoldSpan(this.tracer.startSpan('lockwarden.hold', { attributes }, this.parent));
  }

  failed(err: unknown): void {
    quietly(() => {
      if (err instanceof LockAbortedError) return this.end('aborted');
      this.span.setAttribute('error.type', err instanceof Error ? err.name : typeof err);
      this.span.setStatus({ code: STATUS_ERROR, message: err instanceof Error ? err.message : String(err) });
      this.end('error');
    });
  }

  private end(outcome: AcquireOutcome): void {
    this.span.setAttribute('lock.outcome', outcome);
    this.span.setAttribute('lock.waited_ms', Math.round(performance.now() - this.started));
    this.span.end();
  }
}

class HoldSpan implements HoldTrace {
  private open = true;

  constructor(private readonly span: Span) {}

  minted(fencingToken: number): void {
    if (this.open) quietly(() => this.span.setAttribute('lock.fencing_token', fencingToken));
  }

  released(): void {
    this.end('released', undefined);
  }

  lost(reason: string): void {
    this.end('lost', reason);
  }

  private end(outcome: 'released' | 'lost', reason: string | undefined): void {
    if (!this.open) return;
    this.open = false;
    quietly(() => {
      this.span.setAttribute('lock.outcome', outcome);
      if (reason !== undefined) this.span.setAttribute('lock.lost_reason', reason);
      this.span.end();
    });
  }
}

/** A faulty tracer or span processor must not change the outcome of a lock operation. */
function quietly<T>(fn: () => T): T | undefined {
  try {
    return fn();
  } catch {
    return undefined;
  }
}

/**
 * Lock metrics through the OpenTelemetry API, labelled only by the lock's
 * low-cardinality name (`lock.name`), never by the expanded key:
 * - histograms `lockwarden.lock.wait` and `lockwarden.lock.hold` (ms);
 * - counters `lockwarden.lock.acquisitions`, `.timeouts`, `.skips`, `.losses`,
 *   `.renew_failures` and `.unprotected_runs` (locked work that ran to its end after its lock
 *   was lost);
 * - counters `lockwarden.tick.overruns` and `lockwarden.tick.missed` for scheduled jobs;
 * - `lockwarden.locks.held`, an up/down counter of the locks this process holds.
 *
 * Returns undefined when @opentelemetry/api is not installed: no listener,
 * no cost. Register your MeterProvider before the lock module starts.
 */
export function otelMetricsListener(): LockEventListener | undefined {
  const api = loadOtel<OtelApi>();
  if (!api) return undefined;
  const meter = api.metrics.getMeter('lockwarden');
  const ms = { unit: 'ms' };
  const wait = meter.createHistogram('lockwarden.lock.wait', { ...ms, description: 'Time spent waiting for a lock' });
  const hold = meter.createHistogram('lockwarden.lock.hold', { ...ms, description: 'Time a lock was held' });
  const count = (what: string, description: string): Adder =>
    meter.createCounter(`lockwarden.lock.${what}`, { description });
  const acquisitions = count('acquisitions', 'Locks acquired');
  const timeouts = count('timeouts', 'Acquires that ran out of their wait budget');
  const skips = count('skips', 'Decorated calls skipped because the lock was busy');
  const losses = count('losses', 'Locks lost while held');
  const renewFailures = count('renew_failures', 'Renewal rounds that failed and were retried');
  const unprotected = count('unprotected_runs', 'Locked work that ran to its end after its lock was lost');
  const overruns = meter.createCounter('lockwarden.tick.overruns', {
    description: 'Scheduled ticks skipped because the previous run was still going',
  });
  const missed = meter.createCounter('lockwarden.tick.missed', {
    description: 'Scheduled ticks whose run never finished (instance died or lost the lock)',
  });
  const held = meter.createUpDownCounter('lockwarden.locks.held', { description: 'Locks held by this process' });
  return (event: LockEvent) => {
    const attributes = { 'lock.name': event.name ?? 'unnamed' };
    switch (event.type) {
      case 'acquired':
        acquisitions.add(1, attributes);
        held.add(1, attributes);
        wait.record(event.waitedMs ?? 0, attributes);
        break;
      case 'released':
        held.add(-1, attributes);
        hold.record(event.heldMs ?? 0, attributes);
        break;
      case 'lost':
        losses.add(1, attributes);
        held.add(-1, attributes);
        hold.record(event.heldMs ?? 0, attributes);
        break;
      case 'timeout':
        timeouts.add(1, attributes);
        break;
      case 'skipped':
        skips.add(1, attributes);
        break;
      case 'renewFailed':
        renewFailures.add(1, attributes);
        break;
      case 'unprotected':
        unprotected.add(1, attributes);
        break;
      case 'overrun':
        overruns.add(1, attributes);
        break;
      case 'missed':
        missed.add(1, attributes);
        break;
    }
  };
}
