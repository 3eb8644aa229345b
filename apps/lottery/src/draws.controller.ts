import { BadRequestException, Controller, Get, HttpCode, NotFoundException, Param, Post, Res } from '@nestjs/common';
import { Inject } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Locked } from 'lockwarden';
import type { LotteryConfig } from './config';
import { DrawService } from './draw.service';
import type { DrawResult } from './draw-store';
import { readDraw } from './draw-store';
import { LOTTERY_CONFIG, LOTTERY_DATA } from './lottery.tokens';
import { Reporter } from './reporter';

const DRAW_ID = /^[\w.:-]{1,80}$/;

interface StatusResponse {
  status(code: number): unknown;
}

@Controller()
export class DrawsController {
  constructor(
    private readonly draws: DrawService,
    private readonly reporter: Reporter,
    @Inject(LOTTERY_CONFIG) private readonly config: LotteryConfig,
    @Inject(LOTTERY_DATA) private readonly data: Redis,
  ) {}

  /**
   * Draws now. 201 with the result; 200 when it was drawn before; 409 (with
   * Retry-After) while another instance holds this draw.
   */
  @Post('draws/:id')
  @Locked('lottery:{0}', { onBusy: 'throw' })
  async drawNow(
    @Param('id') id: string,
    @Res({ passthrough: true }) res: StatusResponse,
  ): Promise<DrawResult | undefined> {
    checkId(id);
    const started = Date.now();
    const done = (await this.draws.draw(id))!; // re-enters the lock this route holds
    res.status(done.outcome === 'recorded' ? 201 : 200);
    this.reporter.emit('draw', {
      drawId: id,
      source: 'http',
      action: done.outcome === 'recorded' ? 'drew' : done.outcome,
      instanceId: this.config.instanceId,
      fencingToken: done.fencingToken,
      ms: Date.now() - started,
    });
    return done.result;
  }

  @Get('draws/:id')
  async result(@Param('id') id: string): Promise<DrawResult> {
    checkId(id);
    const result = await readDraw(this.data, id);
    if (!result) throw new NotFoundException(`Draw ${id} has not been drawn.`);
    return result;
  }

  @Get('health')
  @HttpCode(200)
  async health(): Promise<{ status: string; instanceId: string; redis: string }> {
    const redis = await this.data.ping().then(
      () => 'up',
      () => 'down',
    );
    return { status: redis === 'up' ? 'ok' : 'degraded', instanceId: this.config.instanceId, redis };
  }
}

function checkId(id: string): void {
  if (!DRAW_ID.test(id)) throw new BadRequestException('A draw id is 1-80 letters, digits or "._:-".');
}
