// The invariant suite's observer, checked on its own: a judge that never finds anything
// proves nothing, so each rule it tolerates is shown beside the case it must still catch.
import { redisForFile } from '../harness/redis';
import { Observer } from '../invariant/observer';

const server = redisForFile({ own: true });
let observer: Observer;

beforeAll(() => {
  observer = new Observer(server.redis.url);
  server.atEnd(() => observer.close());
});

beforeEach(() => observer.reset());

describe('the invariant observer', () => {
  it('reports two live writers inside one key', async () => {
    await observer.enter('k', 'app0:1:x#1', 'w', 1);
    await observer.enter('k', 'app1:1:x#2', 'w', 2);
    expect(await observer.violations()).toEqual([
      'k: app1:1:x#2 (w) entered while app0:1:x#1 (w) was inside, holding a lock it had not been told was lost',
    ]);
  });

  it('lets readers share a key, and reports a writer among them', async () => {
    await observer.enter('k', 'app0:1:r#1', 'r', 1);
    await observer.enter('k', 'app1:1:r#2', 'r', 2);
    expect(await observer.violations()).toEqual([]);
    await observer.enter('k', 'app1:2:w#3', 'w', 3);
    expect(await observer.violations()).toHaveLength(2);
  });

  it('allows an entry after the holder inside was told its lock was lost', async () => {
    await observer.enter('k', 'app0:1:x#1', 'w', 1);
    await observer.lost('app0:1:x#1');
    await observer.enter('k', 'app1:1:x#2', 'w', 2);
    expect(await observer.violations()).toEqual([]);
  });

  it('allows an entrant that was told its own lock was lost before it entered', async () => {
    await observer.enter('k', 'app0:1:x#1', 'w', 1);
    await observer.lost('app1:1:x#2');
    await observer.enter('k', 'app1:1:x#2', 'w', 2);
    expect(await observer.violations()).toEqual([]);
    // The one inside is still live: a third, live entrant conflicts with it.
    await observer.enter('k', 'app1:2:x#3', 'w', 3);
    expect(await observer.violations()).toHaveLength(1);
  });

  it('checks a frozen holder when it exits: it must have read that its lock was lost', async () => {
    await observer.enter('k', 'app0:1:x#1', 'w', 1);
    await observer.freeze('app0');
    await observer.enter('k', 'app1:1:x#2', 'w', 2);
    await observer.thaw('app0');
    expect(await observer.violations()).toEqual([]);
    await observer.exit('k', 'app0:1:x#1');
    expect(await observer.violations()).toEqual([
      'k: app0:1:x#1 resumed from a pause and finished without being told that another holder had taken its lock',
    ]);
  });

  it('allows a frozen holder whose last look came before its process stopped: only its exit landed late', async () => {
    await observer.enter('k', 'app0:1:x#1', 'w', 1);
    const lookedAt = Date.now() - 1;
    await observer.freeze('app0');
    await observer.enter('k', 'app1:1:x#2', 'w', 2);
    await observer.thaw('app0');
    await observer.exit('k', 'app0:1:x#1', lookedAt);
    expect(await observer.violations()).toEqual([]);
  });

  it('counts an entry that lands while its process is stopped as frozen, and checks it at its exit', async () => {
    await observer.enter('k', 'app1:1:x#2', 'w', 2);
    await observer.freeze('app0');
    // Sent before the stop, landing after it.
    await observer.enter('k', 'app0:1:x#1', 'w', 1);
    await observer.thaw('app0');
    expect(await observer.violations()).toEqual([]);
    await observer.lost('app0:1:x#1');
    await observer.exit('k', 'app0:1:x#1');
    expect(await observer.violations()).toEqual([]);
    // After the thaw its entries are live ones again.
    await observer.enter('k', 'app0:2:x#3', 'w', 3);
    expect(await observer.violations()).toHaveLength(1);
  });

  it('allows holders whose fencing tokens were revoked from outside', async () => {
    await observer.enter('k', 'app0:1:x#5', 'w', 5);
    await observer.revoking('k', () => Promise.resolve(5));
    await observer.enter('k', 'app1:1:x#6', 'w', 6);
    expect(await observer.violations()).toEqual([]);
    await observer.enter('k', 'app1:2:x#7', 'w', 7);
    expect(await observer.violations()).toHaveLength(1);
  });
});
