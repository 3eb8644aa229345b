// `lockwarden/health`: the terminus integration, kept out of the main entry so that
// @nestjs/terminus stays an optional peer.
export { LockHealthIndicator } from '../nest/health/lock-health.indicator';
export type { LockHealthOptions } from '../nest/health/lock-health.indicator';
export type { LockHealthReport } from '../core';
