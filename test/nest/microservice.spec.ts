// Locks in a Nest microservice: a TCP transport and a ClientProxy over loopback, the way a
// service and its caller talk. A busy lock answers the caller with an RpcException that
// carries a code and the retry hint a route's 409 carries, and logs no ERROR.
import { Controller, Module } from '@nestjs/common';
import type { INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientProxyFactory, MessagePattern, Transport } from '@nestjs/microservices';
import type { ClientProxy } from '@nestjs/microservices';
import { firstValueFrom } from 'rxjs';
import { Locked, LockModule, LockService, ReadLocked, Semaphore, WriteLocked } from 'lockwarden';
import { expectHeldUntilReturn, handlerRunsForFile } from '../harness/handler-runs';
import { freePort } from '../harness/free-port';

let service: INestMicroservice;
let client: ClientProxy;
let servicePort = 0;
const { server, gates, runs, logger, errors, prefix } = handlerRunsForFile('microservice');
const entered: number[] = [];
let inside = 0;
let overlaps = 0;

/** A handler's work: it says it entered, then waits for its gate. */
async function enterAndWait(id: number): Promise<number> {
  entered.push(id);
  await gates.passed(id);
  return id;
}

@Controller()
class Jobs {
  constructor(private readonly locks: LockService) {}

  @MessagePattern('work-watched')
  @Locked('job:{0.id}')
  work3(data: { id: number }): Promise<number> {
    const finish = runs.start(data.id, this.locks.current(`job:${data.id}`)!.signal);
    // Ignores its signal and keeps working: the worst case for the lock.
    return enterAndWait(data.id).then((id) => {
      finish();
      return id;
    });
  }

  @MessagePattern('work')
  @Locked('job:{0.id}')
  async work(data: { id: number }): Promise<number> {
    if (++inside > 1) overlaps++;
    await enterAndWait(data.id);
    inside--;
    return data.id;
  }

  @MessagePattern('write-or-busy')
  @WriteLocked('report:{0.id}', { onBusy: 'throw' })
  write(data: { id: number }): Promise<number> {
    return enterAndWait(data.id);
  }

  @MessagePattern('read-or-busy')
  @ReadLocked('report:{0.id}', { onBusy: 'throw' })
  async read(data: { id: number }): Promise<number> {
    return data.id;
  }

  @MessagePattern('permit-or-busy')
  @Semaphore('exports', { limit: 1, onBusy: 'throw' })
  permit(data: { id: number }): Promise<number> {
    return enterAndWait(data.id);
  }

  @MessagePattern('work-or-busy')
  @Locked('job:{0.id}', { onBusy: 'throw' })
  workOrBusy(data: { id: number }): Promise<number> {
    return enterAndWait(data.id);
  }
}

beforeAll(async () => {
  const port = (servicePort = await freePort());
  @Module({
    imports: [LockModule.forRoot({ redis: server.redis.url, keyPrefix: prefix })],
    controllers: [Jobs],
  })
  class AppModule {}
  service = await NestFactory.createMicroservice(AppModule, {
    transport: Transport.TCP,
    options: { host: '127.0.0.1', port },
    logger,
  });
  await service.listen();
  client = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
  await client.connect();
  server.atEnd(
    () => service.close(),
    () => client.close(),
  );
});

beforeEach(() => {
  entered.length = 0;
  errors.length = 0;
});

describe('@Locked on a @MessagePattern handler over TCP', () => {
  it("a caller that goes away aborts the handler's signal, and the lock stays held until the handler returns", async () => {
    const port = servicePort;
    const caller = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
    await caller.connect();
    const run = gates.close(3);
    const sent = firstValueFrom(caller.send<number>('work-watched', { id: 3 })).catch((e: unknown) => e);
    await expectHeldUntilReturn(await runs.started(3), run, () => caller.close(), server.admin, prefix, 'job:3');
    await sent;
  });

  it('runs two messages for one id one after the other', async () => {
    const first = gates.close(1);
    const a = firstValueFrom(client.send<number>('work', { id: 1 }));
    const b = firstValueFrom(client.send<number>('work', { id: 1 }));
    while (entered.length < 1) await new Promise((r) => setImmediate(r));
    first.open(); // the second one enters only now, and runs without waiting (no gate left)
    gates.remove(1);
    expect(await Promise.all([a, b])).toEqual([1, 1]);
    expect(overlaps).toBe(0);
    expect(entered).toEqual([1, 1]);
  });

  it("answers a busy lock with onBusy: 'throw' by an RpcException with a code and a retry hint, and logs no error", async () => {
    const held = gates.close(2);
    const holder = firstValueFrom(client.send<number>('work-or-busy', { id: 2 }));
    while (entered.length < 1) await new Promise((r) => setImmediate(r));
    const busy = await firstValueFrom(client.send<number>('work-or-busy', { id: 2 })).catch((e: unknown) => e);
    expect(busy).toEqual({
      status: 'error',
      code: 'LOCK_BUSY',
      message: 'The resource is busy with other requests. Retry later.',
      retryAfterMs: 1_000,
    });
    held.open();
    expect(await holder).toBe(2);
    expect(entered).toEqual([2]); // the busy one never ran
    expect(errors).toEqual([]);
  });

  it('answers LOCK_BUSY the same way for @WriteLocked, @ReadLocked and @Semaphore', async () => {
    const busy = {
      status: 'error',
      code: 'LOCK_BUSY',
      message: 'The resource is busy with other requests. Retry later.',
      retryAfterMs: 1_000,
    };
    const writing = gates.close(4);
    const writer = firstValueFrom(client.send<number>('write-or-busy', { id: 4 }));
    while (!entered.includes(4)) await new Promise((r) => setImmediate(r));
    expect(await firstValueFrom(client.send<number>('read-or-busy', { id: 4 })).catch((e: unknown) => e)).toEqual(busy);
    expect(await firstValueFrom(client.send<number>('write-or-busy', { id: 4 })).catch((e: unknown) => e)).toEqual(
      busy,
    );
    writing.open();
    expect(await writer).toBe(4);
    expect(await firstValueFrom(client.send<number>('read-or-busy', { id: 4 }))).toBe(4);

    const holding = gates.close(5);
    const holder = firstValueFrom(client.send<number>('permit-or-busy', { id: 5 }));
    while (!entered.includes(5)) await new Promise((r) => setImmediate(r));
    expect(await firstValueFrom(client.send<number>('permit-or-busy', { id: 6 })).catch((e: unknown) => e)).toEqual(
      busy,
    );
    holding.open();
    expect(await holder).toBe(5);
    expect(errors).toEqual([]);
  });
});
