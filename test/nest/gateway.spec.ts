// Locks in a WebSocket gateway: socket.io clients over loopback. A busy lock answers the
// client with an `exception` event that carries a code and the retry hint a route's 409
// carries, and logs no ERROR; a client that disconnects mid-handler aborts the handler's
// signal, while its lock stays held until the handler returns.
import { Module } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { IoAdapter } from '@nestjs/platform-socket.io';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { io } from 'socket.io-client';
import type { Socket } from 'socket.io-client';
import { Locked, LockModule, LockService } from 'lockwarden';
import { expectHeldUntilReturn, handlerRunsForFile } from '../harness/handler-runs';

let app: INestApplication;
let url = '';
const { server, gates, runs, logger, errors, prefix } = handlerRunsForFile('gateway');

@WebSocketGateway()
class JobsGateway {
  constructor(private readonly locks: LockService) {}

  @SubscribeMessage('work')
  @Locked('job:{0.id}', { onBusy: 'throw' })
  work(@MessageBody() data: { id: number }): Promise<number> {
    const signal = this.locks.current(`job:${data.id}`)!.signal;
    const finish = runs.start(data.id, signal);
    // Ignores its signal and keeps working: the worst case for the lock.
    return gates.passed(data.id).then(() => {
      finish();
      return data.id;
    });
  }
}

async function connect(): Promise<Socket> {
  const socket = io(url, { transports: ['websocket'], forceNew: true });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', reject);
  });
  return socket;
}

beforeAll(async () => {
  @Module({
    imports: [LockModule.forRoot({ redis: server.redis.url, keyPrefix: prefix })],
    providers: [JobsGateway],
  })
  class AppModule {}
  app = await NestFactory.create(AppModule, { logger });
  app.useWebSocketAdapter(new IoAdapter(app));
  await app.listen(0, '127.0.0.1');
  url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  server.atEnd(() => app.close());
});

describe('@Locked on a @SubscribeMessage handler, over socket.io', () => {
  it('answers a busy lock with an exception event carrying a code and a retry hint, and logs no error', async () => {
    const [holder, other] = await Promise.all([connect(), connect()]);
    try {
      const run = gates.close(1);
      const first = holder.emitWithAck('work', { id: 1 });
      await runs.started(1);
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
      expect(errors).toEqual([]);
    } finally {
      holder.disconnect();
      other.disconnect();
    }
  });

  it("a client that disconnects aborts the handler's signal, and the lock stays held until the handler returns", async () => {
    const client = await connect();
    const run = gates.close(2);
    client.emit('work', { id: 2 });
    await expectHeldUntilReturn(await runs.started(2), run, () => client.disconnect(), server.admin, prefix, 'job:2');
  });
});
