/**
 * Wraps a deadline timer's callback so that it runs one turn of the event loop later. Node runs
 * expired timers before it reads sockets: after a stall of this process (a long task, a GC
 * pause, a starved CPU), an answer Redis gave in time sits unread while the deadline fires.
 * Deferred by one turn, the answer is read first, and whichever settles first wins.
 *
 * @example
 * const timer = setTimeout(afterReads(() => reject(new Error('no answer'))), ms);
 */
export function afterReads(fn: () => void): () => void {
  return () => {
    setImmediate(fn);
  };
}
