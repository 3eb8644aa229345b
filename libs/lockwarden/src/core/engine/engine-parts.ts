import type { LockContext } from './lease-granter';
import { Watchdog } from '../lease/watchdog';
import type { EventHub } from '../observe/telemetry';
import { otelLockTracer, otelMetricsListener } from '../observe/telemetry';
import type { JobHost } from '../schedule/scheduled-job';
import type { OpenedBackend } from '../backend/lock-backend';
import type { BusWaiter } from '../backend/wake-bus';
import { SETTLE_GRACE_MS } from '../wait/acquire-loop';
import { OutageSweep } from '../wait/outage-sweep';
import type { ResolvedEngineOptions } from '../options/engine-options';
import { EngineShutdown } from './engine-shutdown';
import { HeldLocks } from './held-locks';
import { LeaseGranter } from './lease-granter';
import { LockedCalls } from './locked-call';
import { LockAdmin } from './lock-admin';
import { defaultLockName } from '../options/options';
import { PermitGranter } from './permit-granter';
import { evictionGate } from './eviction-gate';

/** What a framework gives an engine it makes, once, at construction (the Nest layer). */
export interface EngineHooks {
  /**
   * The engine's options, resolved already from the options the engine is given, with the
   * same logger (the Nest layer resolves a module's options once, for its backend and its
   * engine alike); the engine then does not resolve them again.
   */
  readonly resolved?: ResolvedEngineOptions;
}

/** The parts one engine is made of. */
export interface EngineParts {
  readonly watchdog: Watchdog;
  readonly held: HeldLocks;
  readonly stop: EngineShutdown;
  readonly admin: LockAdmin;
  readonly permits: PermitGranter;
  readonly granter: LeaseGranter;
  readonly calls: LockedCalls;
  readonly jobHost: JobHost;
}

/** Makes an engine's parts over its opened backend and wires them to each other, once. */
export function buildEngineParts(
  options: ResolvedEngineOptions,
  backend: OpenedBackend,
  context: LockContext,
  hub: EventHub,
): EngineParts {
  const { store, bus } = backend;
  const logger = options.logger;
  // Every listener goes through the hub, so an event is handed out in one place: the option's
  // listener and the metrics first, then whoever subscribes later (engine.subscribe()).
  if (options.onEvent) hub.add(options.onEvent);
  const metrics = options.metrics ? otelMetricsListener() : undefined;
  if (metrics) hub.add(metrics);
  const emit = hub.emit;
  const watchdog = new Watchdog(store, logger, emit);
  const claim = (channel: string): BusWaiter | undefined => bus.claimHandOffTarget(channel);
  const handOffTarget = store.permitHandOff ? claim : undefined;
  const here = store.mutexHandOffHere
    ? {
        target: claim,
        hold: (lockChannel: string, token: string) => bus.hold(lockChannel, token),
        unhold: (lockChannel: string, token: string) => bus.unhold(lockChannel, token),
      }
    : undefined;
  const held = new HeldLocks(
    store,
    watchdog,
    context,
    logger,
    emit,
    handOffTarget,
    bus.waitedOn,
    here,
    holderCallBudget(options.commandTimeoutMs, store.attemptMs),
  );
  const stop = new EngineShutdown(held, watchdog, backend, logger);
  const outages = new OutageSweep(backend, options.commandTimeoutMs);
  const loop = {
    store,
    bus,
    gates: stop.gates,
    stopping: stop.signal,
    commandTimeoutMs: options.commandTimeoutMs,
    settleGraceMs: SETTLE_GRACE_MS + store.attemptMs,
    emit,
    logger,
    outages,
    firstConnection: backend.firstConnection,
  };
  const tracer = options.traces ? otelLockTracer() : undefined;
  const admit = evictionGate(backend.eviction, options.onEvictingServer, options.commandTimeoutMs);
  const granter = new LeaseGranter(options, store, held, context, loop, emit, tracer, admit);
  // Evictions seen, or a connection back, while locks are held: each held lease is looked at
  // now, not at its next renewal.
  backend.eviction?.watch(
    () => held.size > 0,
    (reason) => void held.checkAll(reason),
  );
  const admin = new LockAdmin(store, options.keyPrefix, watchdog, held, backend);
  const permits = new PermitGranter(options, store, granter, held);
  const calls = new LockedCalls(granter, permits, held, async (key, name) => {
    emit?.({ type: 'skipped', key, name: name ?? defaultLockName(key) });
    logger.debug(`Skipped "${key}": it is held by ${await admin.holderOf(key)}.`);
  });
  const jobHost: JobHost = {
    ticks: backend.ticks,
    keyPrefix: options.keyPrefix,
    leaseMs: options.leaseMs,
    logger,
    emit,
    stopping: stop.signal,
    noticed: new Set(),
    reachable: (key, action, call, late) => outages.bound(key, action, call, late),
    admit,
    tryAcquire: (key, acquire) => granter.tryAcquire(key, acquire),
    acquire: (key, acquire) => granter.acquire(key, acquire),
    runLocked: (handle, fn) => held.runLocked([handle], fn),
    track: (work) => stop.track(work),
  };
  return { watchdog, held, stop, admin, permits, granter, calls, jobHost };
}

/**
 * How long a holder's call (a release, a token read, an extension) waits for Redis:
 * commandTimeoutMs, plus what a call takes by design (a quorum's node timeouts, waits for
 * replicas), as an acquire's settling gets it.
 */
function holderCallBudget(commandTimeoutMs: number, byDesignMs: number): { ms: number; said: string } {
  const ms = commandTimeoutMs + byDesignMs;
  const why =
    byDesignMs > 0 ? `commandTimeoutMs, plus ${byDesignMs} ms the topology takes by design` : 'commandTimeoutMs';
  return { ms, said: `${ms} ms (${why})` };
}
