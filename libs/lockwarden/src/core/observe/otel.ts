import { loadPeer } from '../app-require';

/**
 * @opentelemetry/api when the application has it, else undefined: an optional peer (see
 * loadPeer). `T` is the caller's own view of the few parts it uses.
 */
export function loadOtel<T>(): T | undefined {
  return loadPeer<T>('@opentelemetry/api');
}
