import { Injectable } from '@nestjs/common';
import type { INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Locked, LockModule } from 'lockwarden';
import type { LockModuleOptions } from 'lockwarden';

/** The service the telemetry specs (metrics, traces) watch: a lock per order, and a report that skips when busy. */
@Injectable()
export class Orders {
  @Locked('order:{0}')
  async confirm(id: string): Promise<string> {
    return id;
  }

  @Locked('report', { onBusy: 'skip' })
  async report(): Promise<string> {
    return 'ran';
  }
}

/** An application context of LockModule (with `options`) and Orders, started; the caller closes it. */
export async function ordersApp(options: LockModuleOptions): Promise<INestApplicationContext> {
  const moduleRef = await Test.createTestingModule({
    imports: [LockModule.forRoot(options)],
    providers: [Orders],
  }).compile();
  return moduleRef.init();
}
