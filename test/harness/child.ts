import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';

/** A TypeScript script running in its own Node process, driven by the lines it prints. */
export class ChildScript {
  readonly lines: string[] = [];
  readonly exited: Promise<number | null>;
  /** Settles once the process has exited and every line it printed has been read. */
  private readonly closed: Promise<number | null>;
  private waiters: { re: RegExp; resolve: (m: RegExpMatchArray) => void }[] = [];
  private stderr = '';
  private exitCode: number | null | undefined;

  constructor(readonly child: ChildProcess) {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      this.lines.push(line);
      this.waiters = this.waiters.filter((w) => {
        const m = line.match(w.re);
        if (m) w.resolve(m);
        return !m;
      });
    });
    child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((done) =>
      child.once('exit', (code) => {
        this.exitCode = code;
        done(code);
      }),
    );
    // 'exit' may come before the last output is read (on a busy machine it often does);
    // 'close' comes once stdout and stderr are drained too.
    this.closed = new Promise((done) => child.once('close', (code) => done(code)));
  }

  /** Undefined while the process runs; then its exit code (null when a signal ended it). */
  get exitStatus(): number | null | undefined {
    return this.exitCode;
  }

  /** The last of what the process wrote to stderr. */
  stderrTail(chars = 3000): string {
    return this.stderr.slice(-chars);
  }

  /** Resolves with the first line (already printed or still to come) matching `re`. */
  waitFor(re: RegExp): Promise<RegExpMatchArray> {
    for (const line of this.lines) {
      const m = line.match(re);
      if (m) return Promise.resolve(m);
    }
    return this.next(re);
  }

  /** Resolves with the next line still to come that matches `re`; rejects, with stderr, if the process exits first. */
  next(re: RegExp): Promise<RegExpMatchArray> {
    return new Promise((resolveMatch, reject) => {
      this.waiters.push({ re, resolve: resolveMatch });
      void this.exited.then((code) =>
        reject(new Error(`child exited (${code}) before printing ${re}:\n${this.stderr.slice(-2000)}`)),
      );
    });
  }

  /** Waits for a clean exit, with all its output read, and fails with the child's stderr otherwise. */
  async succeeded(): Promise<void> {
    const code = await this.closed;
    if (code !== 0) throw new Error(`child exited with ${code}:\n${this.stderr.slice(-3000)}`);
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    this.child.kill(signal);
  }
}

/**
 * Node's arguments to run a TypeScript file as CommonJS, like a user's compiled app:
 * ts-node's transpile-only mode, with the transpiled files cached across processes and runs.
 */
export const TS_ARGS = ['-r', resolve('tools', 'ts-register.cjs')];

/** Runs `test/workers/<name>.ts` as CommonJS, like a user's compiled app (see TS_ARGS). */
export function runWorker(name: string, env: Record<string, string>): ChildScript {
  const script = resolve('test', 'workers', `${name}.ts`);
  const child = spawn(process.execPath, [...TS_ARGS, script], {
    env: { ...process.env, TS_NODE_PROJECT: resolve('tsconfig.json'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new ChildScript(child);
}

/**
 * Starts workers (runWorker) for one spec file and SIGKILLs those still running after each
 * test: a test that failed halfway must not leave a process holding its locks into the next.
 */
export function workersForFile(): (name: string, env: Record<string, string>) => ChildScript {
  const children: ChildScript[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
  });
  return (name, env) => {
    const child = runWorker(name, env);
    children.push(child);
    return child;
  };
}
