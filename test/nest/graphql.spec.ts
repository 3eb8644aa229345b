// Locks in GraphQL resolvers: Apollo Server through @nestjs/graphql, over real HTTP. A busy
// lock answers with a GraphQL error whose extensions carry a code and the retry hint a
// route's 409 carries, and logs no ERROR; a client that goes away mid-resolver aborts the
// resolver's signal, while its lock stays held until the resolver returns.
import { ApolloDriver } from '@nestjs/apollo';
import type { ApolloDriverConfig } from '@nestjs/apollo';
import { Module } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Args, GraphQLModule, Int, Mutation, Query, Resolver } from '@nestjs/graphql';
import { request } from 'node:http';
import { Locked, LockModule, LockService } from 'lockwarden';
import { expectHeldUntilReturn, handlerRunsForFile } from '../harness/handler-runs';

let app: INestApplication;
let port = 0;
const { server, gates, runs, logger, errors, prefix } = handlerRunsForFile('graphql');

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
    const finish = runs.start(id, signal);
    // Ignores its signal and keeps working: the worst case for the lock.
    return gates.passed(id).then(() => {
      finish();
      return id;
    });
  }
}

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
  @Module({
    imports: [
      LockModule.forRoot({ redis: server.redis.url, keyPrefix: prefix }),
      GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true }),
    ],
    providers: [JobsResolver],
  })
  class AppModule {}
  app = await NestFactory.create(AppModule, { logger });
  await app.listen(0, '127.0.0.1');
  port = (app.getHttpServer().address() as { port: number }).port;
  server.atEnd(() => app.close());
});

describe('@Locked on a GraphQL mutation, over HTTP', () => {
  it('answers a busy lock with a GraphQL error whose extensions carry a code and a retry hint, and logs no error', async () => {
    const run = gates.close(1);
    const first = post('mutation { work(id: 1) }');
    await runs.started(1);
    const busy = JSON.parse(await post('mutation { work(id: 1) }').body) as {
      errors: { message: string; extensions: Record<string, unknown> }[];
    };
    expect(busy.errors).toHaveLength(1);
    expect(busy.errors[0].message).toBe('The resource is busy with other requests. Retry later.');
    expect(busy.errors[0].extensions).toMatchObject({ code: 'LOCK_BUSY', retryAfterMs: 1_000 });
    run.open();
    expect(JSON.parse(await first.body)).toEqual({ data: { work: 1 } });
    expect(errors).toEqual([]);
  });

  it("a client that goes away aborts the resolver's signal, and the lock stays held until the resolver returns", async () => {
    const run = gates.close(2);
    const call = post('mutation { work(id: 2) }');
    call.body.catch(() => undefined); // it is cut off on purpose
    await expectHeldUntilReturn(await runs.started(2), run, () => call.destroy(), server.admin, prefix, 'job:2');
  });
});
