import { createRequire } from 'node:module';
import { join } from 'node:path';

/**
 * @opentelemetry/api when the application has it, else undefined. It is an optional peer,
 * so it is resolved from the application: through `require` in the CommonJS build, and from
 * the working directory in the ES module build, which has no `require`. `T` is the caller's
 * own view of the few parts it uses, declared locally so that the package's declarations
 * never mention the optional peer.
 */
export function loadOtel<T>(): T | undefined {
  try {
    const load = typeof require === 'function' ? require : createRequire(join(process.cwd(), 'index.js'));
    return load('@opentelemetry/api') as T;
  } catch {
    return undefined;
  }
}
