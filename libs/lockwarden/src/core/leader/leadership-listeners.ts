import type { LockLogger } from '../observe/logger';
import type { LeadershipListener } from './leadership-options';
import type { LeaderTerm } from './term-log';

/**
 * The `onChange()` listeners of one leadership, and telling them. Kept apart from the term
 * bookkeeping that calls them: a listener runs while a term begins or ends, so whatever it
 * throws, or rejects with, is logged here and never reaches the term.
 */
export class LeadershipListeners {
  private readonly listeners = new Set<LeadershipListener>();

  constructor(
    private readonly key: string,
    private readonly logger: LockLogger,
  ) {}

  /** Adds `listener`; returns the unsubscribe function. */
  add(listener: LeadershipListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  notify(event: 'gained' | 'lost', term: LeaderTerm): void {
    for (const listener of this.listeners) {
      try {
        const result = listener(event, term);
        if (result && typeof (result as Promise<void>).then === 'function') {
          (result as Promise<void>).catch((err: unknown) => this.failed(event, err));
        }
      } catch (err) {
        this.failed(event, err);
      }
    }
  }

  private failed(event: string, err: unknown): void {
    this.logger.warn(
      `A "${event}" listener of ${this.key} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
    );
  }
}
