import { createRequire } from 'node:module';
import { join } from 'node:path';

/**
 * `require` as the application sees it: the module's own in the CommonJS build, and one from
 * the working directory in the ES module build, which has no `require`. Optional peers (the
 * OpenTelemetry API, `cron`) are resolved through it, from the application, so the library
 * never depends on them. (Nest's transport packages are imported instead: their exception
 * classes must be the very ones the application's Nest loaded.)
 */
export function appRequire(): NodeJS.Require {
  return typeof require === 'function' ? require : createRequire(join(process.cwd(), 'index.js'));
}
