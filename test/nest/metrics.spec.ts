import type { INestApplicationContext } from '@nestjs/common';
import { metrics } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { LockLostError, LockService, LockTimeoutError } from 'lockwarden';
import { aborted, EventLog } from '../harness/event-log';
import { Orders, ordersApp } from '../harness/orders-app';
import { redisForFile, uniquePrefix } from '../harness/redis';

/** OpenTelemetry metrics, collected from a real SDK while real locks come and go. */
class CollectingReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

interface Point {
  metric: string;
  name: unknown;
  value: number;
}

const server = redisForFile({ own: true });
let app: INestApplicationContext;
const reader = new CollectingReader();
const prefix = uniquePrefix('metrics');
const events = new EventLog();

beforeAll(async () => {
  // The provider is registered before the lock module starts, as OpenTelemetry requires.
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
  app = await ordersApp({ redis: server.redis.url, keyPrefix: prefix, leaseMs: 900, onEvent: events.listener });
  server.atEnd(
    () => metrics.disable(),
    () => app.close(),
  );
});

async function collect(): Promise<Point[]> {
  const { resourceMetrics } = await reader.collect();
  return resourceMetrics.scopeMetrics
    .flatMap((s) => s.metrics)
    .flatMap((m) =>
      m.dataPoints.map((p) => ({
        metric: m.descriptor.name,
        name: p.attributes['lock.name'],
        value: typeof p.value === 'number' ? p.value : (p.value as { count: number }).count,
      })),
    );
}

function value(points: Point[], metric: string, name: string): number {
  return points.find((p) => p.metric === metric && p.name === name)?.value ?? 0;
}

describe('OpenTelemetry metrics', () => {
  it('count, time and gauge locks by their low-cardinality name, never by the expanded key', async () => {
    const orders = app.get(Orders);
    const locks = app.get(LockService);
    for (const id of ['1', '2', '3']) await orders.confirm(id);
    await locks.withLock('payout:42', () => undefined);
    const blocker = await locks.acquire('report');
    expect(await orders.report()).toBeUndefined(); // skipped
    await blocker.release();
    const busy = await locks.acquire('payout:7');
    await expect(locks.acquire('payout:7', { waitMs: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
    await busy.release();
    const named = await locks.acquire('invoice:9', { name: 'invoice' });
    await server.admin.del(`${prefix}{invoice:9}`);
    await aborted(named.signal); // lost at its next renewal

    const points = await collect();
    expect(value(points, 'lockwarden.lock.acquisitions', 'order:{0}')).toBe(3);
    expect(value(points, 'lockwarden.lock.acquisitions', 'payout:*')).toBe(2); // the timed-out one is not
    expect(value(points, 'lockwarden.lock.wait', 'order:{0}')).toBe(3);
    expect(value(points, 'lockwarden.lock.hold', 'order:{0}')).toBe(3);
    expect(value(points, 'lockwarden.lock.skips', 'report')).toBe(1);
    expect(value(points, 'lockwarden.lock.timeouts', 'payout:*')).toBe(1);
    expect(value(points, 'lockwarden.lock.losses', 'invoice')).toBe(1);
    expect(value(points, 'lockwarden.locks.held', 'order:{0}')).toBe(0);
    expect(value(points, 'lockwarden.locks.held', 'invoice')).toBe(0);
    // Cardinality stays bounded: no expanded key ever became a label.
    const names = new Set(points.map((p) => p.name));
    for (const key of ['order:1', 'order:2', 'payout:42', 'payout:7', 'invoice:9']) expect(names.has(key)).toBe(false);
    // Its holder still lets go of the lost lock, or closing the app would wait for it.
    expect(await named.release()).toBe(false);
  });

  it('count locked work that ran to its end after its lock was lost, and never count that lock out twice', async () => {
    const locks = app.get(LockService);
    const settled = await locks
      .withLock('ledger:1', async () => {
        await server.admin.del(`${prefix}{ledger:1}`); // Redis dropped it, as an eviction would
      })
      .catch((err: unknown) => err);
    expect(settled).toBeInstanceOf(LockLostError);
    const points = await collect();
    expect(value(points, 'lockwarden.lock.unprotected_runs', 'ledger:*')).toBe(1);
    expect(value(points, 'lockwarden.lock.losses', 'ledger:*')).toBe(1);
    // Lost at its release: counted out once, by the loss, not again by a release.
    expect(value(points, 'lockwarden.locks.held', 'ledger:*')).toBe(0);
  });

  it('count renewals that fail and are retried', async () => {
    // A lease with seconds of room: the failed renewal is counted before the lease runs out.
    const lock = await app.get(LockService).acquire('renewing:1', { leaseMs: 6_000 });
    const failed = events.next({ type: 'renewFailed', key: 'renewing:1' });
    await server.redis.process!.kill();
    await failed;
    await server.redis.process!.restart();
    expect(value(await collect(), 'lockwarden.lock.renew_failures', 'renewing:*')).toBeGreaterThanOrEqual(1);
    await lock.release().catch(() => false);
  });
});
