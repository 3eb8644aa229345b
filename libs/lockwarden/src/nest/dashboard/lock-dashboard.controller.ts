import {
  BadRequestException,
  Controller,
  ForbiddenException,
  Get,
  Header,
  Headers,
  HttpCode,
  Inject,
  Post,
  Query,
  Sse,
  UseGuards,
} from '@nestjs/common';
import type { CanActivate, MessageEvent, Type } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { LockConfigError } from '../../errors';
import { dashboardPage } from './dashboard-page';
import type { DashboardState } from './dashboard-state';
import type { ResolvedDashboardOptions } from './dashboard-options';
import { LOCK_DASHBOARD_OPTIONS, LockDashboard } from './lock-dashboard.service';

/**
 * The header a force-unlock request must carry: a page on another site cannot send it
 * without the browser asking this server first (CORS), so a forged form post is refused.
 */
export const FORCE_UNLOCK_HEADER = 'x-lockwarden-dashboard';

/**
 * The dashboard's routes under `path`, behind `guards`: the page, its data (`api/state`), its
 * live stream (`api/stream`, server-sent events) and force-unlock (`api/unlock`). A class made
 * per module, because a controller's path and guards are fixed when its class is decorated.
 */
export function dashboardController(options: ResolvedDashboardOptions): Type {
  @Controller(options.path)
  class LockDashboardController {
    private readonly page: string;

    constructor(
      @Inject(LockDashboard) private readonly dashboard: LockDashboard,
      @Inject(LOCK_DASHBOARD_OPTIONS) private readonly settings: ResolvedDashboardOptions,
    ) {
      this.page = dashboardPage({ allowForceUnlock: settings.allowForceUnlock });
    }

    @Get()
    @Header('Content-Type', 'text/html; charset=utf-8')
    @Header('Cache-Control', 'no-store')
    html(): string {
      return this.page;
    }

    @Get('api/state')
    @Header('Cache-Control', 'no-store')
    state(@Query('cursor') cursor?: string): Promise<DashboardState> {
      return this.dashboard.state(typeof cursor === 'string' && cursor !== '' ? cursor : undefined);
    }

    @Sse('api/stream')
    stream(): Observable<MessageEvent> {
      return this.dashboard.stream();
    }

    @Post('api/unlock')
    @HttpCode(200)
    async unlock(
      @Query('key') key: string | undefined,
      @Headers(FORCE_UNLOCK_HEADER) marker: string | undefined,
    ): Promise<{ key: string; removed: boolean }> {
      if (!this.settings.allowForceUnlock) {
        throw new ForbiddenException(
          'force-unlock is off: LockDashboardModule.forRoot({ allowForceUnlock: true }) turns it on',
        );
      }
      if (marker === undefined) throw new ForbiddenException(`force-unlock needs the ${FORCE_UNLOCK_HEADER} header`);
      if (typeof key !== 'string' || key === '') throw new BadRequestException('force-unlock needs ?key=<lock key>');
      try {
        return { key, removed: await this.dashboard.forceUnlock(key) };
      } catch (err) {
        if (err instanceof LockConfigError) throw new BadRequestException(err.message);
        throw err;
      }
    }
  }
  const guards: Type<CanActivate>[] = options.guards;
  if (guards.length > 0) UseGuards(...guards)(LockDashboardController);
  return LockDashboardController;
}
