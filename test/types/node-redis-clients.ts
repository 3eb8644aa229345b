// Compiled by `npm run lint` (tsc --noEmit), never run: node-redis's own client types, of
// `redis` 6 and 5, are accepted where Lockwarden takes a client, with no cast.
import { createClient, createCluster, createSentinel } from 'redis';
import {
  createClient as createClient5,
  createCluster as createCluster5,
  createSentinel as createSentinel5,
} from 'redis5';
import type { LockEngineOptions, LockModuleOptions } from 'lockwarden';

export const six: LockEngineOptions[] = [
  { client: createClient() },
  { client: createCluster({ rootNodes: [] }) },
  { client: createSentinel({ name: 'mymaster', sentinelRootNodes: [] }) },
];
export const five: LockModuleOptions[] = [
  { client: createClient5() },
  { client: createCluster5({ rootNodes: [] }) },
  { client: createSentinel5({ name: 'mymaster', sentinelRootNodes: [] }) },
];
