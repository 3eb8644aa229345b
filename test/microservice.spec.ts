// Locks in a Nest microservice: a TCP transport and a ClientProxy over loopback, the way a
// service and its caller talk. A busy lock answers the caller with an RpcException that
// carries a code and the retry hint a route's 409 carries, and logs no ERROR.
import { Controller, Module } from '@nestjs/common';
import type { INestMicroservice, LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientProxyFactory, MessagePattern, Transport } from '@nestjs/microservices';
import type { ClientProxy } from '@nestjs/microservices';
import { firstValueFrom } from 'rxjs';
import { LockEngine, Locked, LockModule, LockService, ReadLocked, Semaphore, WriteLocked } from 'lockwarden';
import { freePort } from './harness/free-port';
import { startRedis, uniquePrefix } from './harness/redis';
import type { RedisTarget } from './harness/redis';

let redis: RedisTarget;
let service: INestMicroservice;
let client: ClientProxy;
let servicePort = 0;
const logged: { level: string; message: string }[] = [];
/** Work the handler waits for, per job id: the test decides when each run ends. */
const gates = new Map<number, { open: () => void; opened: Promise<void> }>();
const entered: number[] = [];
let inside = 0;
let overlaps = 0;

function gate(id: number): { open: () => void; opened: Promise<void> } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const g = { open, opened };
  gates.set(id, g);
  return g;
}

/** The signal of each watched run's lock, and a promise that settles when its handler returns. */
const watched = new Map<number, { signal: AbortSignal; done: Promise<void> }>();

@Controller()
class Jobs {
  constructor(private readonly locks: LockService) {}

  @MessagePattern('work-watched')
  @Locked('job:{0.id}')
  work3(data: { id: number }): Promise<number> {
    const signal = this.locks.current(`job:${data.id}`)!.signal;
    let finish!: () => void;
    watched.set(data.id, { signal, done: new Promise<void>((resolve) => (finish = resolve)) });
    entered.push(data.id);
    // Ignores its signal and keeps working: the worst case for the lock.
    return (gates.get(data.id)?.opened ?? Promise.resolve()).then(() => {
      finish();
      return data.id;
    });
  }
  @MessagePattern('work')
  @Locked('job:{0.id}')
  async work(data: { id: number }): Promise<number> {
    if (++inside > 1) overlaps++;
    entered.push(data.id);
    await gates.get(data.id)?.opened;
    inside--;
    return data.id;
  }

  @MessagePattern('write-or-busy')
  @WriteLocked('report:{0.id}', { onBusy: 'throw' })
  async write(data: { id: number }): Promise<number> {
    entered.push(data.id);
    await gates.get(data.id)?.opened;
    return data.id;
  }

  @MessagePattern('read-or-busy')
  @ReadLocked('report:{0.id}', { onBusy: 'throw' })
  async read(data: { id: number }): Promise<number> {
    return data.id;
  }

  @MessagePattern('permit-or-busy')
  @Semaphore('exports', { limit: 1, onBusy: 'throw' })
  async permit(data: { id: number }): Promise<number> {
    entered.push(data.id);
    await gates.get(data.id)?.opened;
    return data.id;
  }

  @MessagePattern('work-or-busy')
  @Locked('job:{0.id}', { onBusy: 'throw' })
  async workOrBusy(data: { id: number }): Promise<number> {
    entered.push(data.id);
    await gates.get(data.id)?.opened;
    return data.id;
  }
}

const logger: LoggerService = {
  log: (message: unknown) => logged.push({ level: 'log', message: String(message) }),
  error: (message: unknown) => logged.push({ level: 'error', message: String(message) }),
  warn: (message: unknown) => logged.push({ level: 'warn', message: String(message) }),
};

beforeAll(async () => {
  redis = await startRedis();
  const port = (servicePort = await freePort());
  @Module({
    imports: [LockModule.forRoot({ redis: redis.url, keyPrefix: uniquePrefix('microservice') })],
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
});

afterAll(async () => {
  await client?.close();
  await service?.close();
  await redis?.stop();
});

beforeEach(() => {
  entered.length = 0;
  logged.length = 0;
});

describe('@Locked on a @MessagePattern handler over TCP', () => {
  it("a caller that goes away aborts the handler's signal, and the lock stays held until the handler returns", async () => {
    const port = servicePort;
    const caller = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
    await caller.connect();
    const run = gate(3);
    const sent = firstValueFrom(caller.send<number>('work-watched', { id: 3 })).catch((e: unknown) => e);
    while (!watched.has(3)) await new Promise((r) => setImmediate(r));
    const { signal, done } = watched.get(3)!;
    expect(signal.aborted).toBe(false);
    const aborted = new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason)));
    await caller.close();
    expect(String(await aborted)).toMatch(/caller went away/);
    // The handler still runs: its lock is still held, by Redis's own account.
    const engine = service.get(LockEngine);
    expect((await engine.inspect('job:3')).held).toBe(true);
    run.open();
    await done;
    await sent;
    while ((await engine.inspect('job:3')).held) await new Promise((r) => setTimeout(r, 5));
  });

  it('runs two messages for one id one after the other', async () => {
    const first = gate(1);
    const a = firstValueFrom(client.send<number>('work', { id: 1 }));
    const b = firstValueFrom(client.send<number>('work', { id: 1 }));
    while (entered.length < 1) await new Promise((r) => setImmediate(r));
    first.open(); // the second one enters only now, and runs without waiting (no gate left)
    gates.delete(1);
    expect(await Promise.all([a, b])).toEqual([1, 1]);
    expect(overlaps).toBe(0);
    expect(entered).toEqual([1, 1]);
  });

  it("answers a busy lock with onBusy: 'throw' by an RpcException with a code and a retry hint, and logs no error", async () => {
    const held = gate(2);
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
    expect(logged.filter((l) => l.level === 'error')).toEqual([]);
  });

  it('answers LOCK_BUSY the same way for @WriteLocked, @ReadLocked and @Semaphore', async () => {
    const busy = {
      status: 'error',
      code: 'LOCK_BUSY',
      message: 'The resource is busy with other requests. Retry later.',
      retryAfterMs: 1_000,
    };
    const writing = gate(4);
    const writer = firstValueFrom(client.send<number>('write-or-busy', { id: 4 }));
    while (!entered.includes(4)) await new Promise((r) => setImmediate(r));
    expect(await firstValueFrom(client.send<number>('read-or-busy', { id: 4 })).catch((e: unknown) => e)).toEqual(busy);
    expect(await firstValueFrom(client.send<number>('write-or-busy', { id: 4 })).catch((e: unknown) => e)).toEqual(
      busy,
    );
    writing.open();
    expect(await writer).toBe(4);
    expect(await firstValueFrom(client.send<number>('read-or-busy', { id: 4 }))).toBe(4);

    const holding = gate(5);
    const holder = firstValueFrom(client.send<number>('permit-or-busy', { id: 5 }));
    while (!entered.includes(5)) await new Promise((r) => setImmediate(r));
    expect(await firstValueFrom(client.send<number>('permit-or-busy', { id: 6 })).catch((e: unknown) => e)).toEqual(
      busy,
    );
    holding.open();
    expect(await holder).toBe(5);
    expect(logged.filter((l) => l.level === 'error')).toEqual([]);
  });
});
