// Locks in a WebSocket gateway: socket.io clients over loopback. A busy lock answers the
// client with an `exception` event that carries a code and the retry hint a route's 409
// carries, and logs no ERROR; a client that disconnects mid-handler aborts the handler's
// signal, while its lock stays held until the handler returns.
import { Module } from '@nestjs/common';
import type { INestApplication, LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { IoAdapter } from '@nestjs/platform-socket.io';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { io } from 'socket.io-client';
import type { Socket } from 'socket.io-client';
import { LockEngine, Locked, LockModule, LockService } from 'lockwarden';
import { startRedis, uniquePrefix } from './harness/redis';
import type { RedisTarget } from './harness/redis';

let redis: RedisTarget;
let app: INestApplication;
let url = '';
const logged: { level: string; message: string }[] = [];
const gates = new Map<number, { open: () => void; opened: Promise<void> }>();
const runs = new Map<number, { signal: AbortSignal; done: Promise<void> }>();

function gate(id: number): { open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  gates.set(id, { open, opened });
  return { open };
}

@WebSocketGateway()
class JobsGateway {
  constructor(private readonly locks: LockService) {}

  @SubscribeMessage('work')
  @Locked('job:{0.id}', { onBusy: 'throw' })
  work(@MessageBody() data: { id: number }): Promise<number> {
    const signal = this.locks.current(`job:${data.id}`)!.signal;
    let finish!: () => void;
    runs.set(data.id, { signal, done: new Promise<void>((resolve) => (finish = resolve)) });
    // Ignores its signal and keeps working: the worst case for the lock.
    return (gates.get(data.id)?.opened ?? Promise.resolve()).then(() => {
      finish();
      return data.id;
    });
  }
}

const logger: LoggerService = {
  log: (message: unknown) => logged.push({ level: 'log', message: String(message) }),
  error: (message: unknown) => logged.push({ level: 'error', message: String(message) }),
  warn: (message: unknown) => logged.push({ level: 'warn', message: String(message) }),
};

async function connect(): Promise<Socket> {
  const socket = io(url, { transports: ['websocket'], forceNew: true });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', reject);
  });
  return socket;
}

beforeAll(async () => {
  redis = await startRedis();
  @Module({
    imports: [LockModule.forRoot({ redis: redis.url, keyPrefix: uniquePrefix('gateway') })],
    providers: [JobsGateway],
  })
  class AppModule {}
  app = await NestFactory.create(AppModule, { logger });
  app.useWebSocketAdapter(new IoAdapter(app));
  await app.listen(0, '127.0.0.1');
  url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
});

afterAll(async () => {
  await app?.close();
  await redis?.stop();
});

describe('@Locked on a @SubscribeMessage handler, over socket.io', () => {
  it('answers a busy lock with an exception event carrying a code and a retry hint, and logs no error', async () => {
    const [holder, other] = await Promise.all([connect(), connect()]);
    try {
      const run = gate(1);
      const first = holder.emitWithAck('work', { id: 1 });
      while (!runs.has(1)) await new Promise((r) => setImmediate(r));
      const exception = new Promise<unknown>((resolve) => other.once('exception', resolve));
      other.emit('work', { id: 1 });
      expect(await exception).toEqual({
        status: 'error',
        code: 'LOCK_BUSY',
        message: 'The resource is busy with other requests. Retry later.',
        retryAfterMs: 1_000,
      });
      run.open();
      expect(await first).toBe(1);
      expect(logged.filter((l) => l.level === 'error')).toEqual([]);
    } finally {
      holder.disconnect();
      other.disconnect();
    }
  });

  it("a client that disconnects aborts the handler's signal, and the lock stays held until the handler returns", async () => {
    const client = await connect();
    const run = gate(2);
    client.emit('work', { id: 2 });
    while (!runs.has(2)) await new Promise((r) => setImmediate(r));
    const { signal, done } = runs.get(2)!;
    const aborted = new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason)));
    client.disconnect();
    expect(String(await aborted)).toMatch(/caller went away/);
    const engine = app.get(LockEngine);
    expect((await engine.inspect('job:2')).held).toBe(true);
    run.open();
    await done;
    while ((await engine.inspect('job:2')).held) await new Promise((r) => setTimeout(r, 5));
  });
});
