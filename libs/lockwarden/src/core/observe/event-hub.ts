import type { LockEvent, LockEventListener } from './events';

/**
 * Listeners that come and go while the engine runs (the dashboard's, a test's), beside the
 * fixed `onEvent` given at construction. A faulty listener never breaks a lock operation.
 */
export class EventHub {
  private readonly listeners = new Set<LockEventListener>();

  /** Adds `listener`; call the returned function to remove it. */
  add(listener: LockEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  readonly emit = (event: LockEvent): void => {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // a faulty listener must not change the outcome of a lock operation
      }
    }
  };
}
