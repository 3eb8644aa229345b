import { Inject, SetMetadata } from '@nestjs/common';
import { Observable } from 'rxjs';
import { LockAbortedError, LockConfigError, LockTimeoutError } from '../../errors';
import { DEFAULT_RETRY_AFTER_MS } from '../retry-after';
import { putOff, queueJobOf } from './queue-job';
import { editOptions } from '../../core';
import type { LockedCall, LockEngine, LockSpec } from '../../core';
import { compileKeySpec } from './key-template';
import type { KeyResolver, KeySpec } from './key-template';
import { copyMethodMetadata } from './copy-method-metadata';
import { lockSignalParameter } from './lock-signal.decorator';
import { LOCK_SERVICE_FOR_DECORATORS, LOCK_SERVICE_PROPERTY, SCHEDULED_LOCK_METADATA } from './locked.constants';
import { getLockedMetadata, LOCKED_METADATA } from '../locked-metadata.accessor';
import type { LockedMetadata } from '../locked-metadata.accessor';
import { checkLockedOptions } from './locked-options';
import type { CheckedLockedOptions, LockedOptions } from './locked-options';
import { RequestLockScope } from '../request-lock-scope';

/**
 * What a lock decorator may wrap: a method that returns a promise. The decorated method
 * always returns a promise, since it waits for its lock first; a method typed as returning
 * a plain value (or an Observable) would then lie to its callers, so it does not compile.
 * Make it `async` (an Observable route returns `Promise<Observable<T>>`, which Nest awaits).
 */
export type LockableMethod = (...args: never[]) => PromiseLike<unknown>;

/** The decorator `@Locked`, `@ReadLocked`, `@WriteLocked` and `@ScheduledLock` return. */
export type LockMethodDecorator = <T extends LockableMethod>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<T>,
) => TypedPropertyDescriptor<T> | void;

/**
 * Builds `@Locked` and its read/write siblings.
 *
 * Design: the decorator wraps the method where it is declared and has Nest
 * property-inject the LockEngine into the instance. So a decorated method can
 * never run unwrapped, whoever discovers or calls it (@Cron, queues, event
 * handlers, controllers), and a module that forgets LockModule fails to
 * bootstrap instead of running the method without its lock. Wrapping later
 * with DiscoveryService would leave the method bare whenever the explorer did
 * not run.
 */
export function lockDecorator(kind: 'mutex' | 'read' | 'write', name: string) {
  return (key: KeySpec, options?: LockedOptions): LockMethodDecorator =>
    lockMethod(name, key, (where) => checkLockedOptions(kind, options, where));
}

/**
 * A lock decorator named `name` on the key(s) `key`; `check` validates its options where it is
 * applied and says what each call asks for.
 */
export function lockMethod(
  name: string,
  key: KeySpec,
  check: (where: string) => CheckedLockedOptions<LockSpec>,
): LockMethodDecorator {
  return ((target: object, propertyKey: string | symbol, descriptor: TypedPropertyDescriptor<LockableMethod>) => {
    const where = `${className(target)}.${String(propertyKey)}()`;
    const original = checkLockable(name, where, descriptor);
    const paramTypes = Reflect.getMetadata('design:paramtypes', target, propertyKey) as unknown[] | undefined;
    // Without emitted metadata the declared parameter count is unknown (defaults and rest
    // parameters hide from fn.length); bad indexes are then caught at call time.
    const keys = compileKeySpec(key, where, paramTypes?.length ?? Infinity);
    const metadata = toMetadata(check(where), key, keys, where, lockSignalParameter(target, propertyKey));
    return wrapMethod(target, propertyKey, descriptor, [LOCKED_METADATA, metadata], (self, args, wrapper) =>
      lockAndRun(self, args, metadata, original, wrapper),
    );
  }) as LockMethodDecorator;
}

/**
 * Replaces a decorated method with a wrapper that calls `run`, keeping what other
 * decorators stored on it, recording `metadata` on it, and having Nest inject the engine.
 */
export function wrapMethod(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<LockableMethod>,
  [metadataKey, metadata]: [string, unknown],
  run: (self: unknown, args: unknown[], wrapper: object) => Promise<unknown>,
): TypedPropertyDescriptor<LockableMethod> {
  const original = descriptor.value!;
  const wrapper = function (this: unknown, ...args: unknown[]): Promise<unknown> {
    return run(this, args, wrapper);
  };
  copyMethodMetadata(original, wrapper);
  descriptor.value = wrapper as never;
  SetMetadata(metadataKey, metadata)(target, propertyKey, descriptor);
  injectLockService(target);
  return descriptor;
}

/** The method a lock decorator may wrap, or a LockConfigError saying why not. */
export function checkLockable(
  name: string,
  where: string,
  descriptor: TypedPropertyDescriptor<LockableMethod> | undefined,
): LockableMethod {
  const original = descriptor?.value;
  if (!descriptor || typeof original !== 'function' || descriptor.get || descriptor.set) {
    throw new LockConfigError(`@${name} on ${where}: only methods can be locked, not getters, setters or fields.`);
  }
  if (getLockedMetadata(original) || Reflect.getMetadata(SCHEDULED_LOCK_METADATA, original)) {
    throw new LockConfigError(
      `@${name} on ${where}: the method already has a lock decorator; use one, with several keys if needed.`,
    );
  }
  return original;
}

/** What a lock decorator records about one method. */
export function toMetadata(
  checked: CheckedLockedOptions<LockSpec>,
  spec: KeySpec,
  keys: KeyResolver,
  where: string,
  signalArg: number | undefined,
): LockedMetadata {
  // Metrics label a decorated lock by its template, never by the keys it expands to.
  // Frozen: nothing changes them after this, so the engine resolves them once (LeaseGranter.resolve).
  const lockSpec = editOptions(checked.lockSpec, (o) =>
    Object.freeze({ ...o, name: o.name ?? templateName(spec, where) }),
  );
  return {
    kind: lockSpec.kind,
    spec,
    keys,
    options: lockSpec.options,
    lockSpec,
    onBusy: checked.onBusy,
    retryAfterMs: checked.retryAfterMs,
    where,
    ...(signalArg === undefined ? {} : { signalArg }),
  };
}

function templateName(key: KeySpec, where: string): string {
  if (typeof key === 'string') return key;
  if (Array.isArray(key)) return [...key].sort().join(',');
  return where.replace(/\(\)$/, '');
}

export function className(target: object): string {
  return typeof target === 'function' ? target.name : (target.constructor?.name ?? 'Anonymous');
}

/**
 * Asks Nest to inject `LockService` into a decorated class's instances, once per class
 * whatever mix of `@Locked`, `@Semaphore`, `@LeaderOnly` and the others it carries: every
 * decorator finds it under the one property and the one token.
 */
export function injectLockService(prototype: object): void {
  const marker = Symbol.for('lockwarden:injected');
  if (Object.prototype.hasOwnProperty.call(prototype, marker)) return;
  Object.defineProperty(prototype, marker, { value: true });
  Inject(LOCK_SERVICE_FOR_DECORATORS)(prototype, LOCK_SERVICE_PROPERTY);
}

/** The LockService Nest injected into a decorated instance, if it did. */
export function lockServiceOf<S>(self: unknown): S | undefined {
  return (self as Record<symbol, S | undefined> | undefined)?.[LOCK_SERVICE_PROPERTY];
}

/** The engine Nest injected into a decorated instance, or a LockConfigError saying how to get one. */
export function engineOf(self: unknown, where: string): LockEngine {
  const engine = lockServiceOf<{ readonly lockEngine: LockEngine }>(self)?.lockEngine;
  if (!engine) {
    throw new LockConfigError(
      `${where} is lock-decorated but has no LockService: create the class through Nest and import LockModule. The method did not run.`,
    );
  }
  return engine;
}

/**
 * One call of a decorated method: render its keys and hand the call to the engine, which takes
 * the locks in sorted order, calls the method as their holder, and releases them. Within a
 * request, the request's signal goes with it: a client that goes away cancels the pending
 * acquire and aborts the locks' signals. A route handler's locks also wait for the request to
 * be over (a streamed response); an Observable's, for its subscription to end. They are never
 * released while the method still runs.
 */
export async function lockAndRun(
  self: unknown,
  args: unknown[],
  meta: LockedMetadata,
  original: LockableMethod,
  wrapper: unknown,
): Promise<unknown> {
  const engine = engineOf(self, meta.where);
  const keys = meta.keys(self, args);
  const scope = RequestLockScope.current();
  const route = scope?.claim(wrapper) ? scope : undefined;
  const { onBusy, signalArg } = meta;
  const call: LockedCall = route
    ? { method: original, self, args, onBusy, signalArg, signal: route.signal, granted: route.own, until: route.over }
    : scope
      ? { method: original, self, args, onBusy, signalArg, signal: scope.signal, granted: scope.granted, lateWork }
      : { method: original, self, args, onBusy, signalArg, lateWork };
  const outcome = await engine.lockAndRun(keys, meta.lockSpec, call);
  if (outcome.ran) return outcome.value;
  const err = outcome.error;
  if (err === undefined) return undefined; // skipped: a key was busy
  // A queue job that finds its lock busy goes back to the queue, put off by the retry hint,
  // as a busy route answers 409 with Retry-After; so does one whose wait the app shutting
  // down cut short: it did not run, and another instance will run it.
  const cutShort = err instanceof LockAbortedError && engine.shuttingDown;
  if ((err instanceof LockTimeoutError || cutShort) && !route) {
    const queueJob = queueJobOf(args);
    if (queueJob) return putOff(queueJob, meta.retryAfterMs ?? DEFAULT_RETRY_AFTER_MS, keys[0]);
  }
  // Work outside a request (a cron tick, a queue job) that cannot run because the app is
  // stopping is not an error: it did not run, as a skip. Within a request (a decorated
  // handler, or a service method a controller, gateway or message handler calls) it is: an
  // HTTP request answers 503, and no caller reads an `undefined` the method's type does not allow.
  if (scope || !(err instanceof LockAbortedError) || !engine.shuttingDown) throw err;
  engine.options.logger.debug(`${meta.where} did not run: the application is shutting down.`);
  return undefined;
}

/** An Observable's work runs when it is subscribed: its locks are held until it finalizes. */
function lateWork(value: unknown): { value: unknown; over: PromiseLike<unknown> } {
  if (!isObservable(value)) return { value, over: Promise.resolve() };
  const held = holdUntilFinalized(value);
  return { value: held.observable, over: held.finalized };
}

/** Calls the decorated method as written, with the arguments its wrapper got. */
export function callMethod(original: LockableMethod, self: unknown, args: unknown[]): unknown {
  const value: unknown = Reflect.apply(original, self, args);
  return value;
}

function isObservable(value: unknown): value is Observable<unknown> {
  return value instanceof Observable;
}

function holdUntilFinalized(source: Observable<unknown>): {
  observable: Observable<unknown>;
  finalized: Promise<void>;
} {
  let done!: () => void;
  const finalized = new Promise<void>((resolve) => (done = resolve));
  const observable = new Observable<unknown>((subscriber) => {
    const sub = source.subscribe(subscriber);
    return () => {
      sub.unsubscribe();
      done();
    };
  });
  return { observable, finalized };
}
