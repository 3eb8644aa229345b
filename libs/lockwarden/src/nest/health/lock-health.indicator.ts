import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import type { HealthIndicatorResult } from '@nestjs/terminus';
import { LockEngine } from '../../core';
import type { LockHealthReport } from '../../core';

/** Thresholds of one health check. */
export interface LockHealthOptions {
  /** How long each Redis server may take to answer PING. Default 1 000 ms. */
  timeoutMs?: number;
  /** The watchdog is unhealthy when its last round ran later than this. Default 5 000 ms. */
  maxWatchdogLagMs?: number;
}

/**
 * A @nestjs/terminus health indicator for the locks. It is down when Redis
 * does not answer PING (with a quorum: a majority of the nodes), or when the
 * watchdog runs so late that leases are at risk. The details carry the PING
 * round trip, whether the lock scripts are cached, the watchdog's lag,
 * the locks held and whether a server may evict lock keys (then it is up,
 * with a `warning` naming the policy); when Redis is down, `failure` tells a refused or lost
 * connection (`'refused'`) from a server that does not answer (`'no-answer'`).
 * Import it from `lockwarden/health`; the main entry never loads terminus,
 * which stays an optional peer.
 *
 * @example
 * ```ts
 * @Module({ imports: [TerminusModule], controllers: [HealthController], providers: [LockHealthIndicator] })
 * export class HealthModule {}
 *
 * @Controller('health')
 * export class HealthController {
 *   constructor(private readonly health: HealthCheckService, private readonly locks: LockHealthIndicator) {}
 *
 *   @Get() @HealthCheck()
 *   check() {
 *     return this.health.check([() => this.locks.isHealthy('locks')]);
 *   }
 * }
 * ```
 */
@Injectable()
export class LockHealthIndicator {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly engine: LockEngine,
  ) {}

  async isHealthy<const Key extends string>(
    key: Key,
    options: LockHealthOptions = {},
  ): Promise<HealthIndicatorResult<Key>> {
    const indicator = this.indicators.check(key);
    const report = await this.engine.health(options.timeoutMs ?? 1_000);
    const details = {
      pingMs: report.pingMs,
      servers: report.servers,
      serversUp: report.serversUp,
      scriptsLoaded: report.scriptsLoaded,
      watchdogLagMs: report.watchdogLagMs,
      heldLocks: report.heldLocks,
      keysMayBeEvicted: report.keysMayBeEvicted,
      ...(report.evictionPolicy !== undefined ? { evictionPolicy: report.evictionPolicy } : {}),
      ...(report.evictedKeys !== undefined ? { evictedKeys: report.evictedKeys } : {}),
    };
    if (!report.reachable) {
      return indicator.down({
        ...details,
        ...(report.failure ? { failure: report.failure } : {}),
        message: unreachable(report),
      });
    }
    const maxLag = options.maxWatchdogLagMs ?? 5_000;
    if (report.watchdogLagMs > maxLag) {
      return indicator.down({ ...details, message: `the lock watchdog runs ${report.watchdogLagMs} ms late` });
    }
    // Locks still work on a server that may evict: up, with what an operator should fix.
    if (report.keysMayBeEvicted) return indicator.up({ ...details, warning: evicting(report) });
    return indicator.up(details);
  }
}

/** The warning of a server whose policy may evict lock keys. */
function evicting(report: LockHealthReport): string {
  return (
    `Redis may evict lock keys (maxmemory-policy ${report.evictionPolicy ?? 'unknown'}): ` +
    'set maxmemory-policy noeviction, or give the locks a Redis of their own'
  );
}

/** "Redis is unreachable: …", saying whether it refused the connection or did not answer. */
function unreachable(report: LockHealthReport): string {
  const why = report.error ?? 'no answer';
  if (report.failure === 'refused') return `Redis is unreachable (connection refused or lost): ${why}`;
  if (report.failure === 'no-answer') return `Redis is unreachable (no answer): ${why}`;
  return `Redis is unreachable: ${why}`;
}
