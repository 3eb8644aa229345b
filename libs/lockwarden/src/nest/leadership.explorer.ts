import { Injectable } from '@nestjs/common';
import type { OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { LockEngine, LeadershipRegistry } from '../core';
import type { LeaderTerm } from '../core';
import { getLeaderOnlyName, getOnLeadership } from './decorators/leadership.constants';
import { providerMethods } from './provider-methods';

/**
 * Finds `@LeaderOnly` and `@OnLeadership` methods on the application's providers and
 * controllers (the @nestjs/schedule explorer's way), subscribes the handlers, and stands
 * for election for every name found from bootstrap until shutdown. On shutdown it
 * resigns first (`onModuleDestroy`, before locked work is drained), so another instance
 * takes over at once rather than after a lease.
 *
 * @example
 * ```ts
 * // Provided by LockModule; Nest calls it. Turn shutdown hooks on so SIGTERM resigns:
 * app.enableShutdownHooks();
 * ```
 */
@Injectable()
export class LeadershipExplorer implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly names = new Set<string>();
  private readonly stop = new AbortController();

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly leaderships: LeadershipRegistry,
    private readonly engine: LockEngine,
  ) {}

  onApplicationBootstrap(): void {
    for (const { wrapper, instance, name: method, fn } of providerMethods(this.discovery, this.scanner)) {
      const leaderOnly = getLeaderOnlyName(fn);
      const handlers = getOnLeadership(fn);
      if (leaderOnly === undefined && handlers.length === 0) continue;
      if (!wrapper.isDependencyTreeStatic()) {
        this.engine.options.logger.warn(
          `${wrapper.name}.${method}() is leader-aware, but ${wrapper.name} is request-scoped or transient: ` +
            'its leadership events are not delivered. Use a singleton provider.',
        );
        continue;
      }
      if (leaderOnly !== undefined) this.names.add(leaderOnly);
      for (const { name, event } of handlers) {
        this.names.add(name);
        const handler = fn as (term: LeaderTerm) => unknown;
        this.leaderships.leadership(name).onChange((happened, term) => {
          if (happened === event) return handler.call(instance, term) as void | Promise<void>;
        });
      }
    }
    for (const name of this.names) void this.leaderships.leadership(name).contend({ signal: this.stop.signal });
  }

  async onModuleDestroy(): Promise<void> {
    this.stop.abort();
    await Promise.all([...this.names].map((name) => this.leaderships.leadership(name).resign()));
  }
}
