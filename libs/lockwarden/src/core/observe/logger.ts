/**
 * The few logging calls the engine makes; Nest's `Logger` fits it as is. `log` and `error` are
 * optional so that loggers written for earlier versions still fit: without `log`, news that
 * something works again (Redis reachable after an outage) goes to `warn`, where the outage
 * itself was told; without `error`, what broke a lock's promise (locked work that ran to its end
 * after its lock was lost) goes to `warn` too.
 *
 * @example
 * ```ts
 * const engine = new LockEngine({ redis: 'redis://127.0.0.1:6380' }, {
 *   warn: (m) => pino.warn(m),
 *   debug: (m) => pino.debug(m),
 *   log: (m) => pino.info(m),
 * });
 * ```
 */
export interface LockLogger {
  warn(message: string): void;
  debug(message: string): void;
  log?(message: string): void;
  error?(message: string): void;
}

/** Says `message` at ERROR, or at WARN where the logger has no `error`. */
export function logError(logger: LockLogger, message: string): void {
  if (logger.error) logger.error(message);
  else logger.warn(message);
}

export const SILENT_LOGGER: LockLogger = {
  warn: () => undefined,
  debug: () => undefined,
  log: () => undefined,
  error: () => undefined,
};
