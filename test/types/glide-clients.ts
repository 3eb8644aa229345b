// Compiled by `npm run lint` (tsc --noEmit), never run: Valkey GLIDE's own client types, one
// server and cluster, are accepted where Lockwarden takes a client, with no cast.
import type { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';
import type { LockEngineOptions, LockModuleOptions } from 'lockwarden';

declare const standalone: GlideClient;
declare const cluster: GlideClusterClient;

export const engines: LockEngineOptions[] = [{ client: standalone }, { client: cluster }];
export const modules: LockModuleOptions[] = [{ client: standalone }, { client: cluster }];
