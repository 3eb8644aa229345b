// The main entry: what users call and the types they write. Nest's own parts (its providers,
// the interceptor and its error mappers, decorator metadata) stay out: LockModule installs them.
export { LockModule } from './nest/lock.module';
export { LockService } from './nest/lock.service';
export { LockWatchdog } from './nest/lock-watchdog';
export { LOCK_BACKEND } from './nest/lock.providers';
export { LOCK_MODULE_OPTIONS } from './nest/lock.module-definition';
export type { LockModuleOptions } from './nest/lock-options.interface';
// One name for two things: the type of what LockService.semaphore() returns, and the decorator.
export { Semaphore } from './nest/decorators/semaphore.decorator';
export type { SemaphoreDecoratorOptions } from './nest/decorators/semaphore-decorator-options';
export { Locked } from './nest/decorators/locked.decorator';
export { ReadLocked } from './nest/decorators/read-locked.decorator';
export { WriteLocked } from './nest/decorators/write-locked.decorator';
export type { LockedOptions } from './nest/decorators/locked-options';
export { LockSignal } from './nest/decorators/lock-signal.decorator';
export { ScheduledLock } from './nest/decorators/scheduled-lock.decorator';
export type { ScheduledLockOptions } from './nest/decorators/scheduled-lock.decorator';
export { tickOf } from './nest/decorators/schedule-of';
export type { ScheduleSpec } from './nest/decorators/schedule-of';
export { LeaderOnly } from './nest/decorators/leader-only.decorator';
export { OnLeadership } from './nest/decorators/on-leadership.decorator';
export type { KeySpec } from './nest/decorators/key-template';
export type { LockMethodDecorator } from './nest/decorators/lock-method';
export type { LockErrorReply } from './nest/interceptors/lock-error-reply';
// The engine's part, through its one door (core/README.md).
export { LockEngine, Leadership, LeadershipRegistry } from './core';
export type { LockHandle, LockKind, AcquireOptions, RwAcquireOptions, OnBusy } from './core';
export type { LockEngineOptions, QuorumOptions, ReplicaAckOptions, LockBackend, OpenedBackend } from './core';
export type { RedisClient, RedisSpec, RedisTarget, RedisUrlSpec, ClusterSpec } from './core';
export type { NodeRedisClient, NodeRedisCluster, NodeRedisSentinel } from './core';
export type { GlideClientLike, GlideClusterClientLike, GlideRoute } from './core';
export type { SemaphoreOptions, PermitOptions } from './core';
export type { ScheduledJobOptions, OnOverrun, OnMissed, ScheduledTick } from './core';
export type { CampaignOptions, ChangesOptions, LeadershipListener, LeaderTerm, LeaderChange } from './core';
export type {
  LockInfo,
  LockHolderInfo,
  SemaphoreInfo,
  PermitHolderInfo,
  LockHealthReport,
  EvictionReport,
} from './core';
export type { LockEvent, LockEventType, LockEventListener } from './core';
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
