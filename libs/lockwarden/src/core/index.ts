export { LockEngine } from './lock-engine';
export type { LockEngineOptions } from './engine-options';
export type { LockHandle } from './lock-handle';
export type { AcquireOptions } from './options';
export type { LockLogger } from './logger';
export type { RedisClient, RedisSpec } from './redis-client';
