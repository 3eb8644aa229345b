import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { LockService } from 'lockwarden';
import { AppModule } from './app.module';

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule);
  const locks = app.get(LockService);
  const token = await locks.withLock('lottery:hello', (lock) => lock.fencingToken);
  console.log(`lottery placeholder: took and released "lottery:hello" with fencing token ${token}`);
  await app.close();
}

void main();
