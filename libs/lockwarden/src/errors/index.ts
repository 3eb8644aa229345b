export { LockError } from './lock.error';
export { LockTimeoutError } from './lock-timeout.error';
export { LockLostError } from './lock-lost.error';
export { LockBackendError } from './lock-backend.error';
export { LockConfigError } from './lock-config.error';
export { LockAbortedError } from './lock-aborted.error';
export { LockUpgradeError } from './lock-upgrade.error';
export { LockInterruptedError } from './lock-interrupted.error';
