export { LockEngine } from './engine/lock-engine';
export type { LockEngineOptions } from './engine/engine-options';
export type { LockHandle } from './lease/lock-handle';
export type { AcquireOptions } from './engine/options';
export type { LockLogger } from './observe/logger';
export type { RedisClient, RedisSpec } from './store/redis-client';
export type { LockBackend, Topology } from './store/lock-backend';
