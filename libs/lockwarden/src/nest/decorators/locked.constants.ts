/**
 * The token decorated classes receive `LockService` under. Nest prints it when
 * it cannot resolve it, so it doubles as the fix for a missing LockModule.
 */
export const LOCK_SERVICE_FOR_DECORATORS =
  'LockService (import LockModule.forRoot() or forRootAsync() into this module, or make it global with isGlobal: true, to use @Locked, @ReadLocked and @WriteLocked)';

/** The property a decorated instance holds its LockService in: one for every lockwarden decorator. */
export const LOCK_SERVICE_PROPERTY = Symbol('lockwarden:lockService');

/** Metadata key under which a `@ScheduledLock` method's job settings are stored. */
export const SCHEDULED_LOCK_METADATA = 'lockwarden:scheduled';

/** Metadata key (on the prototype, by method name) of a method's `@LockSignal()` parameter index. */
export const LOCK_SIGNAL_PARAMETER = 'lockwarden:lock-signal';
