// `lockwarden/health`: the terminus integration, kept out of the main entry so that
// @nestjs/terminus stays an optional peer.
export { LockHealthIndicator } from './lock-health.indicator';
export type { LockHealthOptions } from './lock-health.indicator';
export type { LockHealthReport } from '../core/health-probe';
