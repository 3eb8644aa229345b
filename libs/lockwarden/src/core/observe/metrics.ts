import type { LockEvent, LockEventListener } from './events';
import { loadOtel } from './otel';

// The few parts of @opentelemetry/api used here, typed locally so that the package's
// declarations never mention an optional peer.
type Attributes = Record<string, string>;
interface Recorder {
  record(value: number, attributes?: Attributes): void;
}
interface Adder {
  add(value: number, attributes?: Attributes): void;
}
interface Meter {
  createHistogram(name: string, options?: { description?: string; unit?: string }): Recorder;
  createCounter(name: string, options?: { description?: string; unit?: string }): Adder;
  createUpDownCounter(name: string, options?: { description?: string; unit?: string }): Adder;
}
interface OtelApi {
  metrics: { getMeter(name: string, version?: string): Meter };
}

/**
 * Lock metrics through the OpenTelemetry API, labelled only by the lock's
 * low-cardinality name (`lock.name`), never by the expanded key:
 * - histograms `lockwarden.lock.wait` and `lockwarden.lock.hold` (ms);
 * - counters `lockwarden.lock.acquisitions`, `.timeouts`, `.skips`, `.losses` and
 *   `.renew_failures`;
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
      case 'overrun':
        overruns.add(1, attributes);
        break;
      case 'missed':
        missed.add(1, attributes);
        break;
    }
  };
}
