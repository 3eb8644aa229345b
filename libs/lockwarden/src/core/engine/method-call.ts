// What locked work is, as HeldLocks runs it: types only.

/** The rest of locked work after its function settled (a response still streaming), or a function asked for it then. */
export type Until = PromiseLike<unknown> | (() => PromiseLike<unknown> | undefined);

/** A method the engine calls itself, holding locks: what runMethod runs (fields: see LockedCall). */
export interface MethodCall {
  readonly method: (...args: never[]) => unknown;
  readonly self: unknown;
  readonly args: readonly unknown[];
  /** The argument that receives the signal of the locks the call holds (see lockSignal). */
  readonly signalArg?: number;
  readonly until?: PromiseLike<unknown>;
  readonly lateWork?: (value: unknown) => { readonly value: unknown; readonly over: PromiseLike<unknown> };
}
