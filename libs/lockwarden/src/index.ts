// The main entry: what users call and the types they write. Nest's own parts (its providers,
// the interceptor and its error mappers, decorator metadata) stay out: LockModule installs them.
export { LockModule } from './nest/lock.module';
export { LockService } from './nest/lock.service';
export { LockWatchdog } from './nest/lock-watchdog';
export { LOCK_BACKEND } from './nest/lock.providers';
export { LOCK_MODULE_OPTIONS } from './nest/lock.module-definition';
export type { LockModuleOptions } from './nest/lock-options.interface';
export type { LockHandle } from './core/lease/lock-handle';
export type { LockInfo, LockHolderInfo } from './core/backend/lock-info';
export type { SemaphoreInfo, PermitHolderInfo } from './core/backend/lock-info';
export type { LockHealthReport } from './core/backend/lock-info';
export type { EvictionReport } from './core/backend/server-eviction';
export type { AcquireOptions } from './core/options/options';
export type { RwAcquireOptions } from './core/rwlock/rw-options';
export type { LockEngineOptions, QuorumOptions } from './core/options/engine-options';
export type { ReplicaAckOptions } from './core/redis/replica-ack';
export type { RedisClient, RedisSpec, RedisTarget, RedisUrlSpec, ClusterSpec } from './core/redis/redis-client';
export type { NodeRedisClient, NodeRedisCluster, NodeRedisSentinel } from './core/redis/node-redis-types';
export type { GlideClientLike, GlideClusterClientLike, GlideRoute } from './core/redis/glide-connection';
export { LockEngine } from './core/engine/lock-engine';
// One name for two things: the type of what LockService.semaphore() returns, and the decorator.
export { Semaphore } from './nest/decorators/semaphore.decorator';
export type { SemaphoreOptions } from './core/semaphore/semaphore-options';
export type { PermitOptions } from './core/semaphore/permit-options';
export type { SemaphoreDecoratorOptions } from './core/semaphore/semaphore-decorator-options';
export type { LockBackend } from './core/backend/lock-backend';
export { Locked } from './nest/decorators/locked.decorator';
export { ReadLocked } from './nest/decorators/read-locked.decorator';
export { WriteLocked } from './nest/decorators/write-locked.decorator';
export { LockSignal } from './nest/decorators/lock-signal.decorator';
export { ScheduledLock } from './nest/decorators/scheduled-lock.decorator';
export type { ScheduledLockOptions } from './nest/decorators/scheduled-lock.decorator';
export { tickOf } from './nest/decorators/schedule-of';
export type { ScheduleSpec } from './nest/decorators/schedule-of';
export type { ScheduledJobOptions, OnOverrun, OnMissed } from './core/schedule/scheduled-options';
export type { ScheduledTick } from './core/schedule/tick-context';
export { LeaderOnly } from './nest/decorators/leader-only.decorator';
export { OnLeadership } from './nest/decorators/on-leadership.decorator';
export { Leadership } from './core/leader/leadership';
export type { CampaignOptions, ChangesOptions, LeadershipListener } from './core/leader/leadership-options';
export { LeadershipRegistry } from './core/leader/leadership-registry';
export type { LeaderTerm } from './core/leader/term-log';
export type { LeaderChange } from './core/leader/leader-changes';
export type { KeySpec } from './nest/decorators/key-template';
export type { LockMethodDecorator } from './nest/decorators/lock-method';
export type { LockedOptions, OnBusy } from './core/options/locked-options';
export type { LockKind } from './core/backend/lock-store';
export type { LockErrorReply } from './nest/interceptors/lock-error-reply';
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
export type { LockEvent, LockEventType, LockEventListener } from './core/observe/events';
