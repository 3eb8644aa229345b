import { LockAbortedError } from '../../errors';
import type { LockKind } from '../backend/lock-store';
import { loadOtel } from './otel';

// The few parts of @opentelemetry/api used here, typed locally so that the package's
// declarations never mention an optional peer.
type Attributes = Record<string, string | number>;
interface Span {
  setAttribute(key: string, value: string | number): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  end(): void;
  isRecording(): boolean;
}
interface Tracer {
  startSpan(name: string, options: { attributes: Attributes }, context: unknown): Span;
}
interface OtelApi {
  trace: { getTracer(name: string): Tracer };
  context: { active(): unknown };
}

/** SpanStatusCode.ERROR of @opentelemetry/api. */
const STATUS_ERROR = 2;

/** How an acquisition ended, as its span's `lock.outcome` says. */
export type AcquireOutcome = 'acquired' | 'timeout' | 'busy' | 'aborted' | 'error';

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
  readonly lease: { readonly fence: number | undefined; trace: HoldTrace | undefined };
}

/** Spans for the acquisitions and holds of one engine. */
export interface LockTracer {
  /**
   * Runs `ask` (the granter's attempt: a handle, or how many ms the lock stays busy) under a
   * `lockwarden.acquire` span, and on a grant opens the lease's `lockwarden.hold` span.
   * Settles as `ask` does. The span is not made active while `ask` runs: the watchdog timer
   * a grant may arm would keep it as the parent of every later renewal.
   */
  acquire<H extends TracedHandle>(
    req: TracedRequest,
    kind: LockKind,
    ask: () => Promise<H | number>,
  ): Promise<H | number>;
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

  acquire<H extends TracedHandle>(
    req: TracedRequest,
    kind: LockKind,
    ask: () => Promise<H | number>,
  ): Promise<H | number> {
    // The parent is read here, in the caller's async context, before anything is awaited.
    const trace = quietly(
      () =>
        new AcquireSpan(this.tracer, this.api.context.active(), {
          'lock.name': req.name,
          'lock.key': req.key,
          'lock.kind': kind,
        }),
    );
    // With the api installed but no tracer provider registered, spans record nothing: then
    // the acquisition runs as if traces were off (no wrapper promise, no hold span).
    if (!trace || !quietly(() => trace.recording)) return ask();
    return ask().then(
      (got) => {
        // No wait asked for (tryAcquire, waitMs 0) is a refusal, not a wait that ran out.
        quietly(() =>
          typeof got === 'number' ? trace.refused(req.waitMs === 0 ? 'busy' : 'timeout') : trace.granted(got.lease),
        );
        return got;
      },
      (err: unknown) => {
        quietly(() => trace.failed(err));
        throw err;
      },
    );
  }
}

class AcquireSpan {
  private readonly span: Span;
  private readonly started = performance.now();

  constructor(
    private readonly tracer: Tracer,
    private readonly parent: unknown,
    private readonly attributes: Attributes,
  ) {
    this.span = tracer.startSpan('lockwarden.acquire', { attributes }, parent);
  }

  get recording(): boolean {
    return this.span.isRecording();
  }

  granted(lease: TracedHandle['lease']): void {
    // A token minted later, on its first read, is not known here: the hold span gets it then.
    const fence = lease.fence;
    if (fence !== undefined) this.span.setAttribute('lock.fencing_token', fence);
    this.end('acquired');
    const attributes = fence === undefined ? this.attributes : { ...this.attributes, 'lock.fencing_token': fence };
    lease.trace = new HoldSpan(this.tracer.startSpan('lockwarden.hold', { attributes }, this.parent));
  }

  refused(outcome: 'timeout' | 'busy'): void {
    this.end(outcome);
  }

  failed(err: unknown): void {
    if (err instanceof LockAbortedError) return this.end('aborted');
    this.span.setAttribute('error.type', err instanceof Error ? err.name : typeof err);
    this.span.setStatus({ code: STATUS_ERROR, message: err instanceof Error ? err.message : String(err) });
    this.end('error');
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
