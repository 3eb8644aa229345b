import { LockEngine } from 'lockwarden/core';
import { EventLog } from '../harness/event-log';
import { closeNow } from '../harness/engines';
import { FaultProxy } from '../harness/fault-proxy';
import { redisForFile, uniquePrefix } from '../harness/redis';

/**
 * A waiting writer's place in the queue dates from its first "busy" answer, the moment it
 * starts holding new readers back. The writer's engine reaches Redis through a fault proxy
 * that holds back its subscription, so a reader that came after it queues while the writer
 * is still subscribing: that reader must still be served after the writer.
 */
const server = redisForFile({ own: true });
let proxy: FaultProxy;
const engines: LockEngine[] = [];

beforeAll(async () => {
  proxy = await FaultProxy.start(server.redis.process!);
  server.atEnd(() => proxy.stop());
});

afterEach(async () => {
  proxy.pass();
  await Promise.all(engines.splice(0).map(closeNow));
});

function engine(redis: string, keyPrefix: string, events: EventLog): LockEngine {
  const e = new LockEngine({ redis, keyPrefix, onEvent: events.listener });
  engines.push(e);
  return e;
}

it('serves a reader that queued while the waiting writer was still subscribing after the writer', async () => {
  const keyPrefix = uniquePrefix('writer-place');
  const [holderEvents, writerEvents, readerEvents] = [new EventLog(), new EventLog(), new EventLog()];
  const holder = engine(server.redis.url, keyPrefix, holderEvents);
  const writerEngine = engine(proxy.url, keyPrefix, writerEvents);
  const readerEngine = engine(server.redis.url, keyPrefix, readerEvents);
  const granted: string[] = [];

  const held = await holder.acquireRead('doc');
  // The writer's first attempt is answered (the lock is read); its subscription is held back.
  proxy.delaySubscribers(Infinity);
  const subscribing = proxy.nextSubscribeSeen();
  const writing = writerEngine.acquireWrite('doc', { waitMs: 30_000 }).then((lock) => {
    granted.push('writer');
    return lock;
  });
  await subscribing;

  // A reader after it is held back by the writer, and queues while the writer cannot.
  const readerParked = readerEvents.next({ type: 'waiting', key: 'doc' });
  const reading = readerEngine.acquireRead('doc', { waitMs: 30_000 }).then((lock) => {
    granted.push('reader');
    return lock;
  });
  await readerParked;

  // The writer's subscription lands; it parks, then the read it waits for ends.
  const writerParked = writerEvents.next({ type: 'waiting', key: 'doc' });
  proxy.pass();
  await writerParked;
  await held.release();

  // Whoever is served first releases at once, so a wrong order shows as an order, not a hang.
  const first = await Promise.race([writing, reading]);
  await first.release();
  const [w, r] = await Promise.all([writing, reading]);
  if (w !== first) await w.release();
  if (r !== first) await r.release();
  expect(granted).toEqual(['writer', 'reader']);
}, 60_000);
