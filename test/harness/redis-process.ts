import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { freePort } from './free-port';
import { serverPortArgs, testTls } from './tls';

export interface RedisProcessOptions {
  /** Extra `--name value` settings, e.g. `['--cluster-enabled', 'yes']`. */
  args?: string[];
  /**
   * 'redis-server' (default: see defaultServer), 'redis-sentinel', 'valkey-server' (Valkey, from
   * Debian's backports), or the path of a server binary (Valkey 9, which tools/valkey9.sh builds).
   */
  binary?: string;
  /** Lines of a config file, for settings that must come from a file (Sentinel needs one it can rewrite). */
  configLines?: string[];
  /** A fixed port (restarts reuse theirs); otherwise a free one is picked. */
  port?: number;
}

/**
 * The server a test gets wherever it asks for plain Redis (no `binary`): redis-server, or the
 * binary LOCKWARDEN_TEST_SERVER names. A leg of `npm run test:matrix` sets it, so that spec
 * files written for Redis run again, unchanged, on another server (Redis 8.6).
 */
export const defaultServer: string = process.env.LOCKWARDEN_TEST_SERVER || 'redis-server';

const live = new Set<RedisProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Even when a test crashes its worker, no server outlives the process that started it.
  process.once('exit', () => {
    for (const p of live) p.child?.kill('SIGKILL');
  });
}

/**
 * One throwaway Redis process on a loopback port, in its own temp folder,
 * without persistence. Readiness is read from its log, never waited for with
 * sleeps. Also the building block for clusters, sentinels and N masters.
 */
export class RedisProcess {
  child: ChildProcess | undefined;
  readonly host = '127.0.0.1';
  private exited: Promise<void> = Promise.resolve();
  private log = '';

  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly options: RedisProcessOptions,
  ) {}

  get url(): string {
    return `${this.tls ? 'rediss' : 'redis'}://${this.host}:${this.port}`;
  }

  /** Whether it listens for TLS alone (the TLS matrix leg: tls.ts); Sentinels stay plain. */
  get tls(): boolean {
    return testTls !== undefined && !(this.options.binary ?? '').includes('sentinel');
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  static async start(options: RedisProcessOptions = {}): Promise<RedisProcess> {
    installExitHook();
    let lastError: unknown;
    for (let attempt = 0; attempt < 5; attempt++) {
      const port = options.port ?? (await freePort());
      const dir = mkdtempSync(join(tmpdir(), 'lockwarden-redis-'));
      const proc = new RedisProcess(port, dir, options);
      try {
        await proc.launch();
        return proc;
      } catch (err) {
        lastError = err;
        rmSync(dir, { recursive: true, force: true });
        if (options.port !== undefined || !/already in use/i.test(String(err))) break;
      }
    }
    throw lastError;
  }

  /** Starts the same server again on the same port (after stop() or kill()). */
  async restart(): Promise<void> {
    await this.launch();
  }

  private launch(): Promise<void> {
    const binary = this.options.binary ?? defaultServer;
    const args: string[] = [];
    if (this.options.configLines) {
      const file = join(this.dir, `${basename(binary)}.conf`);
      writeFileSync(file, `${this.options.configLines.join('\n')}\n`);
      args.push(file);
    }
    args.push(
      ...(this.tls
        ? serverPortArgs(this.port, (this.options.args ?? []).includes('--cluster-enabled'))
        : ['--port', String(this.port)]),
      '--bind',
      this.host,
      '--dir',
      this.dir,
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'no',
      '--logfile',
      '',
      ...(this.options.args ?? []),
    );
    const child = spawn(binary, args, { cwd: this.dir, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.log = '';
    live.add(this);
    this.register(child.pid);
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    void this.exited.then(() => {
      if (this.child === child) {
        live.delete(this);
        this.unregister(child.pid);
      }
    });
    return new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer): void => {
        this.log += chunk.toString();
        if (/Ready to accept connections|Sentinel ID is/.test(this.log)) {
          child.stdout?.off('data', onData);
          child.stdout?.resume();
          child.off('close', onExit);
          resolve();
        }
      };
      const onExit = (code: number | null): void =>
        reject(
          new Error(`${binary} on port ${this.port} exited (${code}) before it was ready:\n${this.log.slice(-2000)}`),
        );
      const onError = (err: Error): void =>
        reject(
          new Error(
            binary === 'valkey-server'
              ? `could not start valkey-server: ${err.message}. Install it from Debian's bookworm-backports (see .ci/run).`
              : `could not start ${binary}: ${err.message}. Install it: apt-get install -y redis-server redis-sentinel redis-tools`,
          ),
        );
      child.stdout?.on('data', onData);
      child.stderr?.on('data', (chunk: Buffer) => (this.log += chunk.toString()));
      // 'close', not 'exit': only once stdio is drained does the log hold why the server
      // stopped ("Address already in use" is retried on another port by start()).
      child.once('close', onExit);
      child.once('error', onError);
    });
  }

  /** Stops the server and waits for the process to be gone. */
  async stop(): Promise<void> {
    await this.signal('SIGTERM');
  }

  /** Kills the server at once, as a crash would. */
  async kill(): Promise<void> {
    await this.signal('SIGKILL');
  }

  /** Freezes the server (SIGSTOP), as a long stall would: it keeps its sockets and answers nothing. */
  freeze(): void {
    this.child?.kill('SIGSTOP');
  }

  /** Lets a frozen server run again (SIGCONT). */
  thaw(): void {
    this.child?.kill('SIGCONT');
  }

  /** Stops the server for good and removes its folder. */
  async destroy(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async signal(sig: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill(sig);
    await this.exited;
  }

  private register(pid: number | undefined): void {
    const dir = process.env.LOCKWARDEN_TEST_PIDS;
    if (dir && pid) writeFileSync(join(dir, String(pid)), '');
  }

  private unregister(pid: number | undefined): void {
    const dir = process.env.LOCKWARDEN_TEST_PIDS;
    if (!dir || !pid) return;
    try {
      unlinkSync(join(dir, String(pid)));
    } catch {
      // already gone
    }
  }
}
