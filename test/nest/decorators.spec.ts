import { Injectable, Module, SetMetadata } from '@nestjs/common';
import type { INestApplicationContext } from '@nestjs/common';
import { Cron, ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import {
  LockConfigError,
  LockLostError,
  LockModule,
  LockService,
  LockTimeoutError,
  LockUpgradeError,
  Locked,
  ReadLocked,
  WriteLocked,
} from 'lockwarden';
import type { LockKind } from 'lockwarden';
// Decorator metadata is the Nest layer's own, not the main entry's.
import { getLockedMetadata } from '../../libs/lockwarden/src/nest/locked-metadata.accessor';
import { aborted, EventLog } from '../harness/event-log';
import { redisForFile, uniquePrefix } from '../harness/redis';

const server = redisForFile();

/** Counts how many calls are inside a section at once, per key. */
class Overlap {
  inside = new Map<string, number>();
  max = new Map<string, number>();
  total = 0;
  maxTotal = 0;

  async run(key: string, work: () => Promise<unknown>): Promise<void> {
    const n = (this.inside.get(key) ?? 0) + 1;
    this.inside.set(key, n);
    this.max.set(key, Math.max(this.max.get(key) ?? 0, n));
    this.total++;
    this.maxTotal = Math.max(this.maxTotal, this.total);
    try {
      await work();
    } finally {
      this.inside.set(key, n - 1);
      this.total--;
    }
  }
}

const CUSTOM = 'test:custom';

@Injectable()
class Accounts {
  readonly overlap = new Overlap();
  readonly region = 'eu';
  ran = 0;
  seenToken: number | undefined;
  sawAbort = false;

  @Locked('account:{0}')
  async debit(id: string): Promise<string> {
    await this.overlap.run(id, () => server.admin.ping());
    return `debited ${id}`;
  }

  @Locked('account:{0.owner.id}:{1}', { onBusy: 'skip' })
  async nested(_order: { owner: { id: unknown } }, n: number): Promise<number> {
    this.ran++;
    return n;
  }

  @Locked(function (this: Accounts, id: string) {
    return `${this.region}:${id}`;
  })
  async regional(id: string): Promise<string | undefined> {
    return (this as Accounts).locks?.current(`eu:${id}`)?.key;
  }

  @Locked(['transfer:{0}', 'transfer:{1}'])
  async transfer(from: string, to: string): Promise<void> {
    await this.overlap.run('transfer', () => server.admin.ping());
    void from;
    void to;
  }

  @Locked('report', { onBusy: 'skip' })
  async report(): Promise<string> {
    this.ran++;
    return 'built';
  }

  @Locked('strict', { onBusy: 'throw' })
  async strict(): Promise<string> {
    return 'ran';
  }

  @Locked('outer:{0}')
  async outer(id: string): Promise<number> {
    return this.inner(id);
  }

  @Locked('outer:{0}')
  async inner(id: string): Promise<number> {
    void id;
    return this.locks!.current()!.fencingToken();
  }

  // A short lease only where the lock is taken away: the others keep the default's room.
  @Locked('doomed', { leaseMs: 600 })
  async doomed(prefix: string): Promise<string> {
    const lock = this.locks!.current('doomed')!;
    this.seenToken = await lock.fencingToken();
    await server.admin.del(`${prefix}{doomed}`);
    await aborted(lock.signal);
    this.sawAbort = lock.signal.aborted;
    return 'finished anyway';
  }

  @SetMetadata(CUSTOM, 'below')
  @Locked('meta-a')
  async metaBelow(): Promise<void> {}

  @Locked('meta-b')
  @SetMetadata(CUSTOM, 'above')
  async metaAbove(): Promise<void> {}

  locks: LockService | undefined;
}

@Injectable()
class Jobs {
  runs: string[] = [];

  @Cron('0 0 12 * * *', { name: 'lockedFirst' })
  @Locked('job:a', { onBusy: 'skip' })
  async lockedFirst(): Promise<void> {
    this.runs.push('a');
  }

  @Locked('job:b', { onBusy: 'skip' })
  @Cron('0 0 12 * * *', { name: 'cronFirst' })
  async cronFirst(): Promise<void> {
    this.runs.push('b');
  }
}

@Injectable()
class Catalog {
  readonly overlap = new Overlap();
  release: (() => void) | undefined;

  @ReadLocked('catalog:{0}')
  async read(id: string, gate?: Promise<void>, arrived?: () => void): Promise<void> {
    await this.overlap.run(`read`, async () => {
      arrived?.();
      await gate;
    });
    void id;
  }

  @WriteLocked('catalog:{0}')
  async write(id: string): Promise<void> {
    await this.overlap.run(`write`, () => server.admin.ping());
    void id;
  }

  @ReadLocked('catalog:{0}')
  async readThenWrite(id: string): Promise<void> {
    await this.write(id);
  }

  @WriteLocked('catalog:{0}')
  async writeThenRead(id: string): Promise<number> {
    await this.read(id);
    return 1;
  }
}

let ctx: INestApplicationContext;
let accounts: Accounts;
let locks: LockService;
let prefix: string;
const events = new EventLog();

beforeAll(async () => {
  prefix = uniquePrefix('deco');
  const moduleRef = await Test.createTestingModule({
    imports: [
      ScheduleModule.forRoot(),
      LockModule.forRoot({ redis: server.redis.url, keyPrefix: prefix, onEvent: events.listener }),
    ],
    providers: [Accounts, Jobs, Catalog],
  }).compile();
  ctx = await moduleRef.init();
  accounts = ctx.get(Accounts);
  locks = ctx.get(LockService);
  accounts.locks = locks;
  server.atEnd(() => ctx.close());
});

describe('@Locked on service methods', () => {
  it('runs 20 concurrent calls one at a time per key and in parallel across keys', async () => {
    const calls = Array.from({ length: 20 }, (_, i) => accounts.debit(i % 2 ? 'a' : 'b'));
    const results = await Promise.all(calls);
    expect(results.filter((r) => r === 'debited a')).toHaveLength(10);
    expect(accounts.overlap.max.get('a')).toBe(1);
    expect(accounts.overlap.max.get('b')).toBe(1);
    expect(accounts.overlap.maxTotal).toBe(2);
  });

  it("onBusy 'skip' resolves undefined without running the method", async () => {
    const held = await locks.acquire('report');
    const ranBefore = accounts.ran;
    const skipped = events.next({ type: 'skipped', key: 'report' });
    await expect(accounts.report()).resolves.toBeUndefined();
    await skipped;
    expect(accounts.ran).toBe(ranBefore);
    await held.release();
    await expect(accounts.report()).resolves.toBe('built');
  });

  it("onBusy 'throw' rejects at once with LockTimeoutError", async () => {
    const held = await locks.acquire('strict');
    await expect(accounts.strict()).rejects.toBeInstanceOf(LockTimeoutError);
    await held.release();
    await expect(accounts.strict()).resolves.toBe('ran');
  });

  it('fills templates from nested argument paths', async () => {
    const held = await locks.acquire('account:u7:3');
    // Busy on exactly the key the template builds, so the method is skipped.
    await expect(accounts.nested({ owner: { id: 'u7' } }, 3)).resolves.toBeUndefined();
    await held.release();
    await expect(accounts.nested({ owner: { id: 'u7' } }, 3)).resolves.toBe(3);
  });

  it.each([undefined, null, { deep: 1 }, ''])(
    'rejects a placeholder resolving to %p with LockConfigError and does not run',
    async (bad) => {
      const ranBefore = accounts.ran;
      const err = await accounts.nested({ owner: { id: bad } }, 1).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LockConfigError);
      expect((err as Error).message).toMatch(/Accounts\.nested\(\): placeholder "\{0\.owner\.id\}"/);
      expect(accounts.ran).toBe(ranBefore);
    },
  );

  it('calls key functions with this bound to the instance', async () => {
    await expect(accounts.regional('42')).resolves.toBe('eu:42');
  });

  it('locks several keys in sorted order, so opposite orders cannot deadlock', async () => {
    const calls = Array.from({ length: 12 }, (_, i) =>
      i % 2 ? accounts.transfer('x', 'y') : accounts.transfer('y', 'x'),
    );
    await Promise.all(calls);
    expect(accounts.overlap.max.get('transfer')).toBe(1);
  });

  it('re-enters the same key from a nested decorated call', async () => {
    const token = await accounts.outer('n1');
    expect(token).toBeGreaterThan(0);
    expect(await server.admin.exists(`${prefix}{outer:n1}`)).toBe(0);
  });

  it('rejects with LockLostError when the lock is lost mid-method, and the method saw the signal', async () => {
    await expect(accounts.doomed(prefix)).rejects.toBeInstanceOf(LockLostError);
    expect(accounts.sawAbort).toBe(true);
    expect(accounts.seenToken).toBeGreaterThan(0);
  });

  it('keeps other metadata on the method, in either decorator order', () => {
    const proto = Accounts.prototype;
    expect(Reflect.getMetadata(CUSTOM, proto.metaBelow)).toBe('below');
    expect(Reflect.getMetadata(CUSTOM, proto.metaAbove)).toBe('above');
    expect(getLockedMetadata(proto.metaBelow)?.where).toBe('Accounts.metaBelow()');
    expect(getLockedMetadata(proto.metaAbove)?.where).toBe('Accounts.metaAbove()');
    expect(proto.debit.name).toBe('debit');
    expect(proto.debit.length).toBe(1);
  });

  it('refuses to run unlocked when the instance was not created by Nest', async () => {
    const bare = new Accounts();
    await expect(bare.debit('z')).rejects.toThrow(/has no LockService/);
    expect(bare.overlap.total).toBe(0);
  });
});

describe('@ReadLocked and @WriteLocked', () => {
  it('records the kind of lock each method takes, under kind only', () => {
    const proto = Catalog.prototype;
    const kinds: LockKind[] = [proto.read, proto.write, Accounts.prototype.debit].map(
      (m) => getLockedMetadata(m)!.kind,
    );
    expect(kinds).toEqual(['read', 'write', 'mutex']);
    expect(getLockedMetadata(proto.write)).not.toHaveProperty('mode'); // the removed name of kind
  });

  it('lets readers share and keeps writers apart from everyone', async () => {
    const catalog = ctx.get(Catalog);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let inside = 0;
    let allInside!: () => void;
    const allIn = new Promise<void>((r) => (allInside = r));
    const arrived = (): void => {
      if (++inside === 3) allInside();
    };
    const reads = [1, 2, 3].map(() => catalog.read('c1', gate, arrived));
    await allIn;
    expect(catalog.overlap.max.get('read')).toBe(3); // three readers inside at once
    const parked = events.next({ type: 'waiting', key: 'catalog:c1' });
    const write = catalog.write('c1');
    await parked;
    expect(catalog.overlap.max.get('write')).toBeUndefined(); // the writer waits for the readers
    open();
    await Promise.all([...reads, write]);
    expect(catalog.overlap.max.get('write')).toBe(1);
  });

  it('refuses an upgrade from a read-locked method to a write-locked one', async () => {
    await expect(ctx.get(Catalog).readThenWrite('c2')).rejects.toBeInstanceOf(LockUpgradeError);
  });

  it('downgrades from a write-locked method to a read-locked one', async () => {
    await expect(ctx.get(Catalog).writeThenRead('c3')).resolves.toBe(1);
    expect(await server.admin.exists(`${prefix}{catalog:c3}:rw`)).toBe(0);
  });
});

describe('@Locked with @Cron', () => {
  it.each([
    ['lockedFirst', 'job:a', 'a'],
    ['cronFirst', 'job:b', 'b'],
  ])('%s: the job stays registered and locked', async (name, key, mark) => {
    const jobs = ctx.get(Jobs);
    const job = ctx.get(SchedulerRegistry).getCronJob(name);
    expect(job).toBeDefined();

    // The registry's fireOnTick does not return the job's promise: wait on lock events instead.
    const held = await locks.acquire(key);
    const skipped = events.next({ type: 'skipped', key });
    void job.fireOnTick();
    await skipped;
    expect(jobs.runs).not.toContain(mark); // someone else holds the lock
    await held.release();

    const ran = events.next({ type: 'released', key });
    void job.fireOnTick();
    await ran;
    expect(jobs.runs).toContain(mark);
  });
});

describe('the types say what runs', () => {
  it('does not compile on a method that returns a plain value, since the decorated method returns a promise', () => {
    class Counter {
      // @ts-expect-error -- callers would get a Promise typed as a number
      @Locked('count')
      count(): number {
        return 1;
      }

      @Locked('count')
      async countLater(): Promise<number> {
        return 1;
      }
    }
    // `npm run lint` type-checks this file: the line above must stay an error.
    expect(getLockedMetadata(Counter.prototype.count)).toBeDefined();
    expect(getLockedMetadata(Counter.prototype.countLater)).toBeDefined();
  });
});

describe('bad usage is reported where the class is declared', () => {
  it.each([
    [
      'a getter',
      () => {
        class C {
          // @ts-expect-error -- a getter is not a lockable method; refused at compile time too
          @Locked('k')
          get value(): number {
            return 1;
          }
        }
        return C;
      },
      /only methods can be locked/,
    ],
    [
      'an empty key',
      () => {
        class C {
          @Locked('')
          async m(): Promise<void> {}
        }
        return C;
      },
      /non-empty string/,
    ],
    [
      'an unknown option',
      () => {
        class C {
          @Locked('k', { onbusy: 'skip' } as never)
          async m(): Promise<void> {}
        }
        return C;
      },
      /C\.m\(\): Unknown acquire option "onbusy"/,
    ],
    [
      'a bad onBusy',
      () => {
        class C {
          @Locked('k', { onBusy: 'later' as never })
          async m(): Promise<void> {}
        }
        return C;
      },
      /onBusy must be 'wait', 'throw' or 'skip'/,
    ],
    [
      'an argument index beyond the parameters',
      () => {
        class C {
          @Locked('order:{1}')
          async m(id: string): Promise<string> {
            return id;
          }
        }
        return C;
      },
      /refers to argument 1, but the method declares 1 parameter/,
    ],
    [
      'two lock decorators',
      () => {
        class C {
          @Locked('a')
          @Locked('b')
          async m(): Promise<void> {}
        }
        return C;
      },
      /already has a lock decorator/,
    ],
    [
      'a Retry-After hint that is not a whole number of ms',
      () => {
        class C {
          @Locked('a', { retryAfterMs: 1.5 })
          async m(): Promise<void> {}
        }
        return C;
      },
      /retryAfterMs must be an integer/,
    ],
  ])('%s', (_name, declare, message) => {
    expect(declare).toThrow(LockConfigError);
    expect(declare).toThrow(message);
  });
});

describe('without LockModule', () => {
  it('fails at bootstrap with a message that names the fix', async () => {
    @Injectable()
    class Orphan {
      @Locked('k')
      async m(): Promise<void> {}
    }
    @Module({ providers: [Orphan] })
    class OrphanModule {}
    const err = await Test.createTestingModule({ imports: [OrphanModule] })
      .compile()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/import LockModule\.forRoot\(\) or forRootAsync\(\)/);
  });
});
