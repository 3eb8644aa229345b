// `lockwarden/testing`: LockService without Redis, for users' unit tests.
export { LockTestingModule } from './lock-testing.module';
export type { LockTestingOptions } from './lock-testing.module';
export { MemoryLockBackend } from '../core/memory-store';
