// `lockwarden/testing`: LockService without Redis, for users' unit tests.
export { LockTestingModule } from '../nest/testing/lock-testing.module';
export type { LockTestingOptions } from '../nest/testing/lock-testing.module';
export { MemoryLockBackend } from '../core';
