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

// The few parts of @opentelemetry/api the library uses, typed here, so that the package's
// declarations never mention an optional peer.
export type Attributes = Record<string, string | number>;
export interface Span {
  setAttribute(key: string, value: string | number): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  end(): void;
  isRecording(): boolean;
}
export interface Tracer {
  startSpan(name: string, options: { attributes: Attributes }, context: unknown): Span;
}
export interface OtelApi {
  trace: { getTracer(name: string): Tracer };
  context: { active(): unknown };
  metrics: { getMeter(name: string, version?: string): Meter };
}

export interface Recorder {
  record(value: number, attributes?: Attributes): void;
}
export interface Adder {
  add(value: number, attributes?: Attributes): void;
}
export interface Meter {
  createHistogram(name: string, options?: { description?: string; unit?: string }): Recorder;
  createCounter(name: string, options?: { description?: string; unit?: string }): Adder;
  createUpDownCounter(name: string, options?: { description?: string; unit?: string }): Adder;
}
