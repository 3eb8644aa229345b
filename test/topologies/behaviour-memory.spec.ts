import { LockEngine } from 'lockwarden/core';
import type { LockEngineOptions } from 'lockwarden/core';
import { LockTestingModule, MemoryLockBackend } from 'lockwarden/testing';
import { describeLockBehaviour } from '../behaviour/lock-behaviour';
import { closeNow } from '../harness/engines';

/** The shared behaviour suite against LockTestingModule's in-memory backend: no Redis anywhere. */
const engines: LockEngine[] = [];

afterEach(async () => {
  await Promise.all(engines.splice(0).map(closeNow));
});

describeLockBehaviour('the in-memory test double', () => {
  const backend = new MemoryLockBackend();
  const engine = (options: Partial<LockEngineOptions>): LockEngine => {
    const e = new LockEngine(options, undefined, backend);
    engines.push(e);
    return e;
  };
  return {
    pair: (options = {}) => [engine(options), engine(options)],
    module: () => LockTestingModule.forRoot({ backend }),
  };
});
