import type { INestApplicationContext } from '@nestjs/common';
import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { LockAbortedError, LockBackendError, LockEngine, LockService, LockTimeoutError } from 'lockwarden';
import type { LockHandle } from 'lockwarden';
import { aborted, EventLog } from '../harness/event-log';
import { Orders, ordersApp } from '../harness/orders-app';
import { FaultProxy } from '../harness/fault-proxy';
import { redisForFile, uniquePrefix } from '../harness/redis';

/** OpenTelemetry spans, exported by a real SDK while real locks come and go. */
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = trace.getTracer('traces.spec');
const prefix = uniquePrefix('traces');
const events = new EventLog();
const server = redisForFile({ own: true });
let app: INestApplicationContext;
let untraced: INestApplicationContext;
let locks: LockService;

beforeAll(async () => {
  // The context manager is what lets a lock's spans find the caller's active span.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  app = await ordersApp({ redis: server.redis.url, keyPrefix: prefix, leaseMs: 900, onEvent: events.listener });
  untraced = await ordersApp({ redis: server.redis.url, keyPrefix: prefix, traces: false });
  locks = app.get(LockService);
  server.atEnd(
    () => {
      trace.disable();
      context.disable();
    },
    () => app.close(),
    () => untraced.close(),
  );
});

interface Parent {
  spanId: string;
  traceId: string;
}

/** Runs `fn` inside a new active span, the way an instrumented request handler would. */
function within(fn: () => Promise<unknown>): Promise<Parent> {
  return tracer.startActiveSpan('caller', async (span) => {
    try {
      await fn();
    } finally {
      span.end();
    }
    return span.spanContext();
  });
}

/** The finished spans whose parent is `parent`. */
async function childrenOf(parent: Parent): Promise<ReadableSpan[]> {
  await provider.forceFlush();
  return exporter.getFinishedSpans().filter((s) => s.parentSpanContext?.spanId === parent.spanId);
}

function only(spans: ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((s) => s.name === name);
  expect(found).toHaveLength(1);
  return found[0];
}

describe('OpenTelemetry traces', () => {
  it('span the acquisition and the hold of withLock as children of the caller, owner token never recorded', async () => {
    let fence = -1;
    const parent = await within(() =>
      locks.withLock('payout:42', async (lock) => void (fence = await lock.fencingToken())),
    );
    const spans = await childrenOf(parent);
    expect(spans).toHaveLength(2);
    const acquire = only(spans, 'lockwarden.acquire');
    const hold = only(spans, 'lockwarden.hold');
    for (const span of [acquire, hold]) expect(span.spanContext().traceId).toBe(parent.traceId);
    // Exact attribute sets: nothing else, so no owner token, is ever recorded.
    expect(acquire.attributes).toEqual({
      'lock.name': 'payout:*',
      'lock.key': 'payout:42',
      'lock.kind': 'mutex',
      'lock.outcome': 'acquired',
      'lock.waited_ms': expect.any(Number),
    });
    // Uncontended, the grant took no token: the acquire span has none, and the hold span
    // records the one the holder minted when it read it.
    expect(fence).toBeGreaterThan(0);
    expect(hold.attributes).toEqual({
      'lock.name': 'payout:*',
      'lock.key': 'payout:42',
      'lock.kind': 'mutex',
      'lock.fencing_token': fence,
      'lock.outcome': 'released',
    });
    expect(acquire.status.code).toBe(SpanStatusCode.UNSET);
    expect(hold.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('span the locks of decorated methods, with the decorator name and the expanded key', async () => {
    const parent = await within(() => app.get(Orders).confirm('1'));
    const spans = await childrenOf(parent);
    expect(spans.map((s) => [s.name, s.attributes['lock.name'], s.attributes['lock.key']]).sort()).toEqual([
      ['lockwarden.acquire', 'order:{0}', 'order:1'],
      ['lockwarden.hold', 'order:{0}', 'order:1'],
    ]);
    expect(only(spans, 'lockwarden.hold').attributes['lock.outcome']).toBe('released');
  });

  it('say which kind of lock was taken: read, write or permit', async () => {
    const parent = await within(async () => {
      await locks.withReadLock('catalog:1', () => undefined);
      await locks.withWriteLock('catalog:2', () => undefined);
      await locks.semaphore('exports', { limit: 2 }).withPermit(() => undefined);
    });
    const kinds = (await childrenOf(parent)).map((s) => `${s.name} ${String(s.attributes['lock.kind'])}`).sort();
    expect(kinds).toEqual([
      'lockwarden.acquire permit',
      'lockwarden.acquire read',
      'lockwarden.acquire write',
      'lockwarden.hold permit',
      'lockwarden.hold read',
      'lockwarden.hold write',
    ]);
  });

  it('open no second span for a reentrant acquire of a lock already held', async () => {
    const parent = await within(() => locks.withLock('ledger:1', () => locks.withLock('ledger:1', () => undefined)));
    const spans = await childrenOf(parent);
    expect(spans.map((s) => s.name).sort()).toEqual(['lockwarden.acquire', 'lockwarden.hold']);
  });

  it('end the acquire span as timeout when the wait ran out, with no hold span', async () => {
    const holder = await locks.acquire('payout:7');
    const parent = await within(() =>
      expect(locks.acquire('payout:7', { waitMs: 100 })).rejects.toBeInstanceOf(LockTimeoutError),
    );
    await holder.release();
    const [span, ...rest] = await childrenOf(parent);
    expect(rest).toEqual([]);
    expect(span.name).toBe('lockwarden.acquire');
    expect(span.attributes).toEqual({
      'lock.name': 'payout:*',
      'lock.key': 'payout:7',
      'lock.kind': 'mutex',
      'lock.outcome': 'timeout',
      'lock.waited_ms': expect.any(Number),
    });
    expect(span.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('end the acquire span as busy when tryAcquire or onBusy skip found the lock held', async () => {
    const holder = await locks.acquire('report');
    const parent = await within(async () => {
      expect(await locks.tryAcquire('report')).toBeNull();
      expect(await app.get(Orders).report()).toBeUndefined();
    });
    await holder.release();
    const spans = await childrenOf(parent);
    expect(spans.map((s) => [s.name, s.attributes['lock.outcome']])).toEqual([
      ['lockwarden.acquire', 'busy'],
      ['lockwarden.acquire', 'busy'],
    ]);
  });

  it('end the acquire span as aborted when the caller gave up waiting', async () => {
    const holder = await locks.acquire('payout:8');
    const abort = new AbortController();
    const parent = await within(async () => {
      const waiting = events.next({ type: 'waiting', key: 'payout:8' });
      const attempt = locks.acquire('payout:8', { waitMs: 60_000, signal: abort.signal });
      await waiting;
      abort.abort();
      await expect(attempt).rejects.toBeInstanceOf(LockAbortedError);
    });
    await holder.release();
    const span = only(await childrenOf(parent), 'lockwarden.acquire');
    expect(span.attributes['lock.outcome']).toBe('aborted');
    expect(span.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('end the acquire span as error, with status ERROR, when Redis does not answer', async () => {
    const proxy = await FaultProxy.start({ host: server.redis.process!.host, port: server.redis.process!.port });
    const engine = new LockEngine({ redis: proxy.url, keyPrefix: uniquePrefix('traces-fault') });
    try {
      await (await engine.acquire('warm-up')).release(); // connected, scripts loaded
      proxy.blackhole();
      const parent = await within(() =>
        expect(engine.acquire('payout:9', { waitMs: 200 })).rejects.toBeInstanceOf(LockBackendError),
      );
      const span = only(await childrenOf(parent), 'lockwarden.acquire');
      expect(span.attributes['lock.outcome']).toBe('error');
      expect(span.attributes['error.type']).toBe('LockBackendError');
      expect(span.status.code).toBe(SpanStatusCode.ERROR);
    } finally {
      proxy.pass();
      await engine.close();
      await proxy.stop();
    }
  });

  it('end the hold span as lost, with the reason, when the lock is force-removed', async () => {
    let handle: LockHandle | undefined;
    const parent = await within(async () => {
      // A lease with seconds of room: the renewal that finds the key gone comes before it ends.
      handle = await locks.acquire('invoice:9', { name: 'invoice', leaseMs: 3_000 });
    });
    expect(await app.get(LockService).forceUnlock('invoice:9')).toBe(true);
    await aborted(handle!.signal); // lost at its next renewal
    expect(await handle!.release()).toBe(false);
    const hold = only(await childrenOf(parent), 'lockwarden.hold');
    expect(hold.attributes['lock.name']).toBe('invoice');
    expect(hold.attributes['lock.outcome']).toBe('lost'); // the later release changed nothing
    expect(hold.attributes['lock.lost_reason']).toMatch(/no longer ours/);
  });

  it('record nothing for a module with traces: false', async () => {
    const quiet = untraced.get(LockService);
    const parent = await within(async () => {
      await quiet.withLock('payout:50', () => undefined);
      await (await quiet.acquire('payout:50')).release();
      await locks.withLock('payout:51', () => undefined); // the traced module, beside it
    });
    const keys = (await childrenOf(parent)).map((s) => s.attributes['lock.key']);
    expect(keys).toEqual(['payout:51', 'payout:51']);
  });
});
