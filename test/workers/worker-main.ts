/**
 * Runs a worker's `main`. If it fails, the worker prints the error and ends at once, with
 * exit code 1: its engines and clients would otherwise keep the process alive, and the test
 * would wait for it until its own timeout, without the error (a history worker whose lock call
 * failed once did exactly that).
 */
export function workerMain(main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
