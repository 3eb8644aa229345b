// A Nest app whose route takes many locks at once, in one request, through LockService.
// Prints "status <HTTP status> <locks taken>" after one request to it, then exits. Node's own
// warnings go to stderr, where the test reads them.
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockModule, LockService } from '../../libs/lockwarden/src';
import { workerMain } from './worker-main';

const { REDIS, PREFIX, LOCKS = '20' } = process.env;

@Controller()
class ManyController {
  constructor(private readonly locks: LockService) {}

  @Get('many')
  async many(): Promise<number[]> {
    const keys = Array.from({ length: Number(LOCKS) }, (_, i) => `many:${i}`);
    return Promise.all(keys.map((key) => this.locks.withLock(key, (lock) => lock.fencingToken())));
  }
}

@Module({ imports: [LockModule.forRoot({ redis: REDIS!, keyPrefix: PREFIX })], controllers: [ManyController] })
class AppModule {}

async function main(): Promise<void> {
  const app = await NestFactory.create(AppModule, { logger: ['error'] });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  const res = await fetch(`http://127.0.0.1:${port}/many`);
  const tokens = (await res.json()) as number[];
  // Node reports a warning on a later turn of the loop: give it one before closing.
  await new Promise<void>((resolve) => setTimeout(resolve, 0));
  console.log(`status ${res.status} ${tokens.length}`);
  await app.close();
}

workerMain(main);
