import { Inject, Injectable } from '@nestjs/common';
import type { MessageEvent, OnApplicationShutdown, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { Observable } from 'rxjs';
import type { Subscriber } from 'rxjs';
import { LockEngine } from '../../core';
import { LockConfigError } from '../../errors';
import { dashboardEvent, HeldSince } from './dashboard-state';
import type { DashboardEvent, DashboardState } from './dashboard-state';
import type { ResolvedDashboardOptions } from './dashboard-options';

export const LOCK_DASHBOARD_OPTIONS = Symbol('LOCK_DASHBOARD_OPTIONS');

/**
 * What the dashboard's page shows, and the live stream behind it. Redis is looked at only
 * while a page is open: one survey per `refreshMs` for every open page together (plus one
 * soon after a lock event of this instance), never one per viewer.
 */
@Injectable()
export class LockDashboard implements OnModuleInit, OnModuleDestroy, OnApplicationShutdown {
  private engine!: LockEngine;
  private held!: HeldSince;
  private readonly events: DashboardEvent[] = [];
  private readonly viewers = new Set<Subscriber<MessageEvent>>();
  private unsubscribe: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private refreshing = false;
  private again = false;
  private closed = false;

  constructor(
    @Inject(LOCK_DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    private readonly moduleRef: ModuleRef,
  ) {}

  onModuleInit(): void {
    const engine = this.moduleRef.get(LockEngine, { strict: false, each: false }) as LockEngine | undefined;
    if (!engine)
      throw new LockConfigError('LockDashboardModule needs LockModule (or LockTestingModule) in the application');
    this.engine = engine;
    this.held = new HeldSince(engine.options.instanceId);
    this.unsubscribe = engine.subscribe((event) => this.record(dashboardEvent(event, Date.now())));
  }

  /** Ends every open stream first, so that closing the HTTP server never waits for a page. */
  onModuleDestroy(): void {
    this.close();
  }

  onApplicationShutdown(): void {
    this.close();
  }

  /** One page of the state, read now (the data endpoint). */
  async state(cursor?: string): Promise<DashboardState> {
    const at = Date.now();
    // The events are copied after the survey: any sent on the stream meanwhile are in it.
    const eviction = this.engine.eviction();
    const base = async () => ({
      instanceId: this.engine.options.instanceId,
      events: [...this.events],
      allowForceUnlock: this.options.allowForceUnlock,
      eviction: await eviction,
    });
    try {
      const { locks, ...survey } = await this.engine.survey({
        cursor,
        limit: this.options.limit,
        scanBudget: this.options.scanBudget,
      });
      return { ...(await base()), ...survey, locks: this.held.annotate(locks, Date.now(), cursor === undefined) };
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      return {
        ...(await base()),
        at,
        locks: [],
        semaphores: [],
        leaderships: [],
        scanned: 0,
        keys: 0,
        cursor: null,
        error,
      };
    }
  }

  /** The live stream: the state now and every `refreshMs`, and each lock event as it happens. */
  stream(): Observable<MessageEvent> {
    return new Observable<MessageEvent>((viewer) => {
      if (this.closed) {
        viewer.complete();
        return undefined;
      }
      this.viewers.add(viewer);
      this.refreshSoon(0);
      return () => {
        this.viewers.delete(viewer);
        if (this.viewers.size === 0) this.stopTimer();
      };
    });
  }

  /** Force-unlocks `key` (mutex and read/write); true when a lock was held. */
  async forceUnlock(key: string): Promise<boolean> {
    const removed = await this.engine.forceUnlock(key);
    this.refreshSoon(0);
    return removed;
  }

  private record(event: DashboardEvent): void {
    this.held.record(event);
    this.events.push(event);
    if (this.events.length > this.options.recentEvents)
      this.events.splice(0, this.events.length - this.options.recentEvents);
    this.send({ type: 'event', data: event });
    // A change made here shows at once, not at the next refresh.
    if (event.type === 'acquired' || event.type === 'released' || event.type === 'lost') this.refreshSoon(50);
  }

  private refreshSoon(ms: number): void {
    if (this.closed || this.viewers.size === 0) return;
    if (this.refreshing) {
      this.again = true;
      return;
    }
    this.stopTimer();
    this.timer = setTimeout(() => void this.refresh(), ms);
    this.timer.unref();
  }

  private async refresh(): Promise<void> {
    this.timer = undefined;
    this.refreshing = true;
    try {
      const state = await this.state();
      this.send({ type: 'state', data: state });
    } finally {
      this.refreshing = false;
      const next = this.again ? 0 : this.options.refreshMs;
      this.again = false;
      this.refreshSoon(next);
    }
  }

  private send(message: MessageEvent): void {
    for (const viewer of this.viewers) viewer.next(message);
  }

  private stopTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stopTimer();
    this.unsubscribe?.();
    for (const viewer of [...this.viewers]) viewer.complete();
    this.viewers.clear();
  }
}
