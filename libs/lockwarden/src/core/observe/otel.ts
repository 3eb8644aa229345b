import { appRequire } from '../app-require';

/**
 * @opentelemetry/api when the application has it, else undefined: an optional peer, resolved
 * from the application (appRequire). `T` is the caller's own view of the few parts it uses,
 * declared locally so that the package's declarations never mention the optional peer.
 */
export function loadOtel<T>(): T | undefined {
  try {
    return appRequire()('@opentelemetry/api') as T;
  } catch {
    return undefined;
  }
}
