/**
 * The few logging calls the engine makes; Nest's `Logger` fits it as is. `log` is optional so
 * that loggers written for earlier versions still fit: without it, news that something works
 * again (Redis reachable after an outage) goes to `warn`, where the outage itself was told.
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
}

export const SILENT_LOGGER: LockLogger = {
  warn: () => undefined,
  debug: () => undefined,
  log: () => undefined,
};
