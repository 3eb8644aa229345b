import { Module } from '@nestjs/common';
import { LockModule } from 'lockwarden';

/** The lottery sample: for now only wires LockModule; the draw arrives with the sample itself. */
@Module({
  imports: [LockModule.forRoot({ redis: process.env.REDIS_URL ?? 'redis://127.0.0.1:6380', isGlobal: true })],
})
export class AppModule {}
