// `lockwarden/dashboard`: the live lock page, a subpath of its own so that apps that do not
// mount it never load it.
export { LockDashboardModule } from '../nest/dashboard/lock-dashboard.module';
export { LockDashboard } from '../nest/dashboard/lock-dashboard.service';
export { FORCE_UNLOCK_HEADER } from '../nest/dashboard/lock-dashboard.controller';
export type { LockDashboardOptions } from '../nest/dashboard/dashboard-options';
export type { DashboardState, DashboardLock, DashboardEvent } from '../nest/dashboard/dashboard-state';
export type { LockSurvey, SurveyOptions, SurveyedLock, QueuedWaiterInfo, LeadershipInfo, SurveyedTerm } from '../core';
