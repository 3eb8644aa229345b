// One app instance of the invariant suite: a Nest HTTP app whose routes enter critical
// sections through every entry path the library has. Each section reports its entry and
// exit to the observer Redis (OBSERVER), which the library never sees, and reports when
// its lock's signal aborts. Sections ignore their signal and keep working: the worst case.
// Query: ms = how long the section works, throw = 1 to fail after working.
// POST /restart closes the app (app.close()) and starts a new one on the same port.
import 'reflect-metadata';
import { Controller, Get, Injectable, Module, Param, Post, Query, StreamableFile } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Readable } from 'node:stream';
import { Observable } from 'rxjs';
import { Locked, LockModule, LockService, ReadLocked, ScheduledLock, WriteLocked } from '../../libs/lockwarden/src';
import type { Leadership, LockEvent, LockHandle } from '../../libs/lockwarden/src';
import { Observer } from '../invariant/observer';
import type { SectionMode } from '../invariant/observer';
import { workerMain } from './worker-main';

const { REDIS, OBSERVER, PREFIX, NAME = 'x', PORT = '0', LEASE_MS = '1000', GRACE_MS = '300' } = process.env;
const observer = new Observer(OBSERVER!);
let sections = 0;
/** Sections inside, by the lock (key and fencing token) they hold: how a `lost` event finds them. */
const holders = new Map<string, Set<string>>();

function onEvent(event: LockEvent): void {
  if (event.type !== 'lost') return;
  for (const id of holders.get(`${event.key}#${event.fencingToken}`) ?? [])
    void observer.lost(id).catch(() => undefined);
}

/**
 * Registers a section as the holder of its locks (a lock already lost is reported at once)
 * and sends its entry. `exit` may be called at any moment after: the observer gets commands
 * of one connection in order, so an exit never overtakes its entry.
 */
function begin(
  handles: LockHandle[],
  tokens: number[],
  id: string,
  mode: SectionMode,
): { entered: Promise<void>; exit: () => Promise<void> } {
  const sends: Promise<void>[] = [];
  for (const h of handles) {
    const at = `${h.key}#${tokens[handles.indexOf(h)]}`;
    holders.set(at, (holders.get(at) ?? new Set()).add(id));
    if (!h.isHeld()) sends.push(observer.lost(id));
  }
  handles.forEach((h, i) => sends.push(observer.enter(h.key, id, mode, tokens[i])));
  let exited: Promise<void> | undefined;
  const exit = (): Promise<void> => {
    // A protected section looks at its signal before its last write: after a pause, that
    // look is what tells it the lock is gone (and reports the loss before the exit).
    for (const h of handles) void h.signal.aborted;
    const lookedAt = Date.now();
    exited ??= Promise.all(
      handles.map(async (h, i) => {
        await observer.exit(h.key, id, lookedAt);
        holders.get(`${h.key}#${tokens[i]}`)?.delete(id);
      }),
    ).then(() => undefined);
    return exited;
  };
  return { entered: Promise.all(sends).then(() => undefined), exit };
}

/**
 * The sections' fencing tokens, read (minted, for an uncontended mutex) before the section
 * enters, as a fenced resource needs them. A holder that lost its lock gets none: the read
 * rejects with LockLostError, and the section never enters.
 */
function tokensOf(handles: LockHandle[]): Promise<number[]> {
  return Promise.all(handles.map((h) => h.fencingToken()));
}

async function enter(
  handles: LockHandle[],
  tokens: number[],
  id: string,
  mode: SectionMode,
): Promise<() => Promise<void>> {
  const { entered, exit } = begin(handles, tokens, id, mode);
  await entered;
  return exit;
}

/** One critical section as the observer sees it: entry, work that ignores the signal, exit. */
async function section(
  handles: LockHandle[],
  mode: SectionMode,
  ms: string | undefined,
  fail: string | undefined,
  path = (new Error().stack?.split('\n')[2] ?? '').trim().split(' ')[1] ?? '?',
) {
  const tokens = await tokensOf(handles);
  const id = `${NAME}:${++sections}:${path}#${tokens.join(',')}`;
  const exit = await enter(handles, tokens, id, mode);
  try {
    await new Promise((resolve) => setTimeout(resolve, Number(ms ?? '0')));
    if (fail === '1') throw new Error('the handler failed on purpose');
    return id;
  } finally {
    await exit();
  }
}

const leaderTurns = new Map<string, Promise<unknown>>();

/** The current term, seen as the handle of its lock: what a leader's section holds. */
function termHandle(leadership: Leadership, key: string): LockHandle {
  const term = leadership.currentTerm;
  if (!term) throw new Error(`leader section entered without a term for ${key}`);
  return {
    key,
    fencingToken: () => Promise.resolve(term.fencingToken),
    get signal() {
      return leadership.signal;
    },
    isHeld: () => leadership.isLeader(),
  } as unknown as LockHandle;
}

function held(locks: LockService, ...keys: string[]): LockHandle[] {
  return keys.map((k) => {
    const h = locks.current(k);
    if (!h) throw new Error(`section entered without a handle for ${k}`);
    return h;
  });
}

@Injectable()
class Orders {
  constructor(readonly locks: LockService) {}

  @Locked('{0}')
  async process(key: string, ms?: string, fail?: string): Promise<string> {
    return section(held(this.locks, key), 'w', ms, fail);
  }

  @ScheduledLock('{0}', { lockAtLeastMs: 100 })
  async scheduled(key: string, ms?: string, fail?: string): Promise<string | undefined> {
    return section(held(this.locks, key), 'w', ms, fail);
  }
}

@Controller()
class Routes {
  constructor(
    private readonly locks: LockService,
    private readonly orders: Orders,
  ) {}

  @Get('route/:key')
  @Locked('{0}')
  route(@Param('key') key: string, @Query('ms') ms?: string, @Query('throw') fail?: string): Promise<string> {
    return section(held(this.locks, key), 'w', ms, fail);
  }

  @Get('observable/:key')
  @Locked('{0}')
  async observable(
    @Param('key') key: string,
    @Query('ms') ms?: string,
    @Query('throw') fail?: string,
  ): Promise<Observable<string>> {
    const handles = held(this.locks, key);
    const tokens = await tokensOf(handles);
    // A well-behaved producer: its work runs from subscription until it completes, or until
    // it is unsubscribed (Nest unsubscribes when the client goes away), when it stops.
    return new Observable<string>((subscriber) => {
      const id = `${NAME}:${++sections}:observable#${tokens[0]}`;
      const { entered, exit } = begin(handles, tokens, id, 'w');
      let timer: NodeJS.Timeout | undefined;
      let stopped = false;
      void entered.then(() => {
        if (stopped) return;
        timer = setTimeout(
          () => {
            void exit().then(() => {
              if (fail === '1') subscriber.error(new Error('the handler failed on purpose'));
              else {
                subscriber.next(id);
                subscriber.complete();
              }
            });
          },
          Number(ms ?? '0'),
        );
      });
      return () => {
        stopped = true;
        clearTimeout(timer);
        void exit().catch(() => undefined);
      };
    });
  }

  @Get('stream/:key')
  @Locked('{0}')
  async stream(@Param('key') key: string, @Query('ms') ms?: string): Promise<StreamableFile> {
    const handles = held(this.locks, key);
    const tokens = await tokensOf(handles);
    const id = `${NAME}:${++sections}:stream#${tokens[0]}`;
    // The section is the producing of the body: from the first read to its last chunk, or
    // until the body is destroyed (Nest destroys it when the client goes away).
    let section: ReturnType<typeof begin> | undefined;
    let timer: NodeJS.Timeout | undefined;
    const body = new Readable({
      read() {
        if (section) return;
        section = begin(handles, tokens, id, 'w');
        const { entered, exit } = section;
        void entered.then(() => {
          timer = setTimeout(
            () => {
              void exit().then(() => {
                this.push(id);
                this.push(null);
              });
            },
            Number(ms ?? '0'),
          );
        });
      },
      destroy(err, done) {
        clearTimeout(timer);
        void (section?.exit() ?? Promise.resolve()).then(
          () => done(err),
          () => done(err),
        );
      },
    });
    return new StreamableFile(body);
  }

  @Get('service/:key')
  service(@Param('key') key: string, @Query('ms') ms?: string, @Query('throw') fail?: string): Promise<string> {
    return this.orders.process(key, ms, fail);
  }

  @Get('scheduled/:key')
  async scheduled(@Param('key') key: string, @Query('ms') ms?: string): Promise<string> {
    return (await this.orders.scheduled(key, ms)) ?? 'skipped';
  }

  @Get('with-lock/:key')
  withLock(@Param('key') key: string, @Query('ms') ms?: string, @Query('throw') fail?: string): Promise<string> {
    return this.locks.withLock(key, (lock) => section([lock], 'w', ms, fail));
  }

  @Get('fair/:key')
  fair(@Param('key') key: string, @Query('ms') ms?: string, @Query('throw') fail?: string): Promise<string> {
    return this.locks.withLock(key, (lock) => section([lock], 'w', ms, fail), { fair: true });
  }

  /**
   * A leader's section. `key` is the term's lock (`leader:<name>`). The process leads or not
   * as a whole, so its own leader sections take turns; across processes, leadership alone
   * must keep them apart.
   */
  @Get('leader/:key')
  leader(@Param('key') key: string, @Query('ms') ms?: string, @Query('throw') fail?: string): Promise<string> {
    const leadership = this.locks.leadership(key.slice('leader:'.length));
    const turn = (leaderTurns.get(key) ?? Promise.resolve()).then(async () => {
      await leadership.campaign();
      try {
        return (
          (await leadership.runIfLeader(() => section([termHandle(leadership, key)], 'w', ms, fail))) ?? 'not leader'
        );
      } finally {
        await leadership.resign();
      }
    });
    leaderTurns.set(
      key,
      turn.catch(() => undefined),
    );
    return turn;
  }

  /** A one-permit semaphore's section: a permit is a lease like a lock, so it must keep them apart too. */
  @Get('permit/:key')
  permit(@Param('key') key: string, @Query('ms') ms?: string, @Query('throw') fail?: string): Promise<string> {
    return this.locks.semaphore(key, { limit: 1 }).withPermit((permit) => section([permit], 'w', ms, fail));
  }

  @Get('acquire/:key')
  async acquire(@Param('key') key: string, @Query('ms') ms?: string, @Query('throw') fail?: string): Promise<string> {
    const lock = await this.locks.acquire(key);
    try {
      return await section([lock], 'w', ms, fail);
    } finally {
      await lock.release();
    }
  }

  @Get('multi/:a/:b')
  @Locked(['{0}', '{1}'])
  multi(
    @Param('a') a: string,
    @Param('b') b: string,
    @Query('ms') ms?: string,
    @Query('throw') fail?: string,
  ): Promise<string> {
    return section(held(this.locks, a, b), 'w', ms, fail);
  }

  @Get('read/:key')
  @ReadLocked('{0}')
  read(@Param('key') key: string, @Query('ms') ms?: string, @Query('throw') fail?: string): Promise<string> {
    return section(held(this.locks, key), 'r', ms, fail);
  }

  @Get('write/:key')
  @WriteLocked('{0}')
  write(@Param('key') key: string, @Query('ms') ms?: string, @Query('throw') fail?: string): Promise<string> {
    return section(held(this.locks, key), 'w', ms, fail);
  }

  @Post('restart')
  restart(): string {
    setImmediate(() => void restart());
    return 'restarting';
  }
}

@Module({
  imports: [
    LockModule.forRoot({
      redis: REDIS!,
      keyPrefix: PREFIX,
      instanceId: NAME,
      leaseMs: Number(LEASE_MS),
      waitMs: 30_000,
      shutdownGraceMs: Number(GRACE_MS),
      commandTimeoutMs: 1_000,
      onEvent,
    }),
  ],
  controllers: [Routes],
  providers: [Orders],
})
class AppModule {}

let app: INestApplication | undefined;
let port = Number(PORT);

async function start(): Promise<void> {
  app = await NestFactory.create(AppModule, { logger: ['error'] });
  try {
    await app.listen(port, '127.0.0.1');
  } catch (err) {
    // Another process of the test run may take the port in the moment it is free, between
    // the old app's close and this listen: listen on another, which the test reads from
    // the line that says so.
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    await app.listen(0, '127.0.0.1');
  }
  port = (app.getHttpServer().address() as { port: number }).port;
}

async function restart(): Promise<void> {
  const old = app;
  app = undefined;
  await old?.close();
  await start();
  console.log(`restarted ${port}`);
}

async function main(): Promise<void> {
  await start();
  console.log(`listening ${port}`);
}

workerMain(main);
