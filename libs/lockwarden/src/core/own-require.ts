import { createRequire } from 'node:module';
import { join } from 'node:path';

/**
 * `require` resolving from this package, for a dependency loaded only when used (ioredis,
 * when Lockwarden makes its own connection). The CommonJS build uses its own `require`. The
 * ES module build has none: the build writes this file there as
 * `createRequire(import.meta.url)`. Run from source as ES modules (the tests), it resolves
 * from the working directory, the repository's root.
 */
export function ownRequire(): NodeJS.Require {
  return typeof require === 'function' ? require : createRequire(join(process.cwd(), 'index.js'));
}
