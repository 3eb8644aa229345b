// Locks in GraphQL resolvers: Apollo Server through @nestjs/graphql, over real HTTP. A busy
// lock answers with a GraphQL error whose extensions carry a code and the retry hint a
// route's 409 carries, and logs no ERROR; a client that goes away mid-resolver aborts the
// resolver's signal, while its lock stays held until the resolver returns.
import { ApolloDriver } from '@nestjs/apollo';
import type { ApolloDriverConfig } from '@nestjs/apollo';
import { Module } from '@nestjs/common';
import type { INestApplication, LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Args, GraphQLModule, Int, Mutation, Query, Resolver } from '@nestjs/graphql';
import { request } from 'node:http';
import { LockEngine, Locked, LockModule, LockService } from 'lockwarden';
import { startRedis, uniquePrefix } from './harness/redis';
import type { RedisTarget } from './harness/redis';

let redis: RedisTarget;
let app: INestApplication;
let port = 0;
const logged: { level: string; message: string }[] = [];
const gates = new Map<number, { open: () => void; opened: Promise<void> }>();
const runs = new Map<number, { signal: AbortSignal; done: Promise<void> }>();

function gate(id: number): { open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  gates.set(id, { open, opened });
  return { open };
}

@Resolver()
class JobsResolver {
  constructor(private readonly locks: LockService) {}

  @Query(() => Int)
  ping(): number {
    return 1;
  }

  @Mutation(() => Int)
  @Locked('job:{0}', { onBusy: 'throw' })
  work(@Args('id', { type: () => Int }) id: number): Promise<number> {
    const signal = this.locks.current(`job:${id}`)!.signal;
    let finish!: () => void;
    runs.set(id, { signal, done: new Promise<void>((resolve) => (finish = resolve)) });
    // Ignores its signal and keeps working: the worst case for the lock.
    return (gates.get(id)?.opened ?? Promise.resolve()).then(() => {
      finish();
      return id;
    });
  }
}

const logger: LoggerService = {
  log: (message: unknown) => logged.push({ level: 'log', message: String(message) }),
  error: (message: unknown) => logged.push({ level: 'error', message: String(message) }),
  warn: (message: unknown) => logged.push({ level: 'warn', message: String(message) }),
};

/** Posts one GraphQL operation; `abortAfterSent` destroys the request once it is sent. */
function post(query: string): { body: Promise<string>; destroy: () => void } {
  const data = JSON.stringify({ query });
  const req = request({
    host: '127.0.0.1',
    port,
    path: '/graphql',
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
  });
  const body = new Promise<string>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
  });
  req.end(data);
  return { body, destroy: () => req.destroy() };
}

beforeAll(async () => {
  redis = await startRedis();
  @Module({
    imports: [
      LockModule.forRoot({ redis: redis.url, keyPrefix: uniquePrefix('graphql') }),
      GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true }),
    ],
    providers: [JobsResolver],
  })
  class AppModule {}
  app = await NestFactory.create(AppModule, { logger });
  await app.listen(0, '127.0.0.1');
  port = (app.getHttpServer().address() as { port: number }).port;
});

afterAll(async () => {
  await app?.close();
  await redis?.stop();
});

describe('@Locked on a GraphQL mutation, over HTTP', () => {
  it('answers a busy lock with a GraphQL error whose extensions carry a code and a retry hint, and logs no error', async () => {
    const run = gate(1);
    const first = post('mutation { work(id: 1) }');
    while (!runs.has(1)) await new Promise((r) => setImmediate(r));
    const busy = JSON.parse(await post('mutation { work(id: 1) }').body) as {
      errors: { message: string; extensions: Record<string, unknown> }[];
    };
    expect(busy.errors).toHaveLength(1);
    expect(busy.errors[0].message).toBe('The resource is busy with other requests. Retry later.');
    expect(busy.errors[0].extensions).toMatchObject({ code: 'LOCK_BUSY', retryAfterMs: 1_000 });
    run.open();
    expect(JSON.parse(await first.body)).toEqual({ data: { work: 1 } });
    expect(logged.filter((l) => l.level === 'error')).toEqual([]);
  });

  it("a client that goes away aborts the resolver's signal, and the lock stays held until the resolver returns", async () => {
    const run = gate(2);
    const call = post('mutation { work(id: 2) }');
    call.body.catch(() => undefined); // it is cut off on purpose
    while (!runs.has(2)) await new Promise((r) => setImmediate(r));
    const { signal, done } = runs.get(2)!;
    const aborted = new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason)));
    call.destroy();
    expect(String(await aborted)).toMatch(/caller went away/);
    const engine = app.get(LockEngine);
    expect((await engine.inspect('job:2')).held).toBe(true);
    run.open();
    await done;
    while ((await engine.inspect('job:2')).held) await new Promise((r) => setTimeout(r, 5));
  });
});
