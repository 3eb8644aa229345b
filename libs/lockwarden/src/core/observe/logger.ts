/** The few logging calls the engine makes; Nest's `Logger` fits it as is. */
export interface LockLogger {
  warn(message: string): void;
  debug(message: string): void;
}

export const SILENT_LOGGER: LockLogger = {
  warn: () => undefined,
  debug: () => undefined,
};
