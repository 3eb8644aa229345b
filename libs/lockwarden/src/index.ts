export { LockModule } from './lock.module';
export { LockService } from './lock.service';
export { LockWatchdog } from './lock-watchdog';
export { LOCK_MODULE_OPTIONS } from './lock.module-definition';
export type { LockModuleOptions } from './lock-options.interface';
export type { LockHandle } from './core/lock-handle';
export type { LockInfo, LockHolderInfo } from './core/inspect';
export type { LockHealthReport } from './core/health-probe';
export type { AcquireOptions, RwAcquireOptions } from './core/options';
export type { LockEngineOptions, QuorumOptions } from './core/engine-options';
export type { ReplicaAckOptions } from './core/replica-ack';
export type { RedisSpec, RedisClient, ClusterSpec } from './core/redis-client';
export { LockEngine } from './core/lock-engine';
export { Locked } from './decorators/locked.decorator';
export { ReadLocked } from './decorators/read-locked.decorator';
export { WriteLocked } from './decorators/write-locked.decorator';
export { ScheduledLock } from './decorators/scheduled-lock.decorator';
export type { KeySpec } from './decorators/key-template';
export type { LockedOptions, OnBusy } from './decorators/locked-options';
export { LOCKED_METADATA } from './decorators/locked.constants';
export { getLockedMetadata } from './decorators/locked-metadata.accessor';
export type { LockedMetadata, LockMode } from './decorators/locked-metadata.accessor';
export { LockInterceptor } from './interceptors/lock.interceptor';
export { toHttpError } from './interceptors/lock-http-errors';
export {
  LockError,
  LockTimeoutError,
  LockLostError,
  LockBackendError,
  LockConfigError,
  LockAbortedError,
  LockUpgradeError,
  LockInterruptedError,
} from './errors';
export type { LockEvent, LockEventType, LockEventListener } from './core/events';
