import { Injectable, Module } from '@nestjs/common';
import type { CanActivate, ExecutionContext, INestApplication } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { LockEngine, LockModule, LockService } from 'lockwarden';
import type { LockHandle } from 'lockwarden';
import { FORCE_UNLOCK_HEADER, LockDashboardModule } from 'lockwarden/dashboard';
import type { DashboardState } from 'lockwarden/dashboard';
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { launchChromium } from '../harness/browser';
import { EventLog } from '../harness/event-log';
import { redisForFile, startRedis, uniquePrefix } from '../harness/redis';

/** Lets a request through only with `x-admin: yes`. */
@Injectable()
class AdminGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    return req.headers['x-admin'] === 'yes';
  }
}

const server = redisForFile();
let prefix: string;
let express: INestApplication;
let expressUrl: string;
let fastify: NestFastifyApplication;
let fastifyUrl: string;
let other: LockEngine;
let browser: Browser;
const shots = mkdtempSync(join(tmpdir(), 'lockwarden-dashboard-'));
/** The events of web-1 (the Express app), as its engine emitted them. */
const webEvents = new EventLog();

async function appWith(
  dashboard: ReturnType<typeof LockDashboardModule.forRoot>,
  instanceId: string,
  onEvent?: EventLog['listener'],
) {
  @Module({
    imports: [
      LockModule.forRoot({ redis: server.redis.url, keyPrefix: prefix, instanceId, isGlobal: true, onEvent }),
      dashboard,
    ],
  })
  class AppModule {}
  return Test.createTestingModule({ imports: [AppModule] }).compile();
}

beforeAll(async () => {
  prefix = uniquePrefix('dash');
  const expressRef = await appWith(
    LockDashboardModule.forRoot({ allowForceUnlock: true }),
    'web-1',
    webEvents.listener,
  );
  express = expressRef.createNestApplication({ logger: false });
  server.atEnd(() => express.close());
  await express.listen(0, '127.0.0.1');
  expressUrl = await express.getUrl();
  const fastifyRef = await appWith(LockDashboardModule.forRoot({ path: '/ops/locks/', guards: [AdminGuard] }), 'web-2');
  fastify = fastifyRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false });
  server.atEnd(() => fastify.close());
  await fastify.listen(0, '127.0.0.1');
  fastifyUrl = await fastify.getUrl();
  other = new LockEngine({ redis: server.redis.url, keyPrefix: prefix, instanceId: 'worker-7' });
  browser = await launchChromium();
  server.atEnd(
    () => other.close(),
    () => browser.close(),
  );
});

afterAll(() => rmSync(shots, { recursive: true, force: true }));

/** The owner token inside a mutex's Redis value ("owner|fence|instance"): what must never be shown. */
async function ownerTokenOf(key: string): Promise<string> {
  const value = await server.admin.get(`${prefix}{${key}}`);
  expect(value).not.toBeNull();
  return value!.split('|')[0];
}

/** The first `count` server-sent messages of a stream, read over plain HTTP. */
function firstMessages(url: string, count: number, headers: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = get(url, { headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        if (text.split('\n\n').length > count) {
          req.destroy();
          resolve(text);
        }
      });
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
  });
}

describe('the lock dashboard in a real browser', () => {
  it('shows a lock another instance takes, and its release, without a reload; never an owner token', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const fails: string[] = [];
    page.on('pageerror', (err) => fails.push(err.message));
    await page.goto(`${expressUrl}/locks`);
    await page.locator('#status.live').waitFor();
    await page.getByText('No lock is held.').waitFor();

    const held = await other.acquire('order:42', { leaseMs: 60_000, renew: false });
    // Minted now: the page shows a token only once one was minted.
    const heldToken = await held.fencingToken();
    // A survey taken between the grant and the mint shows the row without a token at first:
    // wait for the row as it is once the page learned the token.
    const row = page.locator('tr[data-lock="order:42"]', { hasText: String(heldToken) });
    await row.waitFor();
    const text = await row.innerText();
    expect(text).toContain('worker-7');
    expect(text).toContain(String(heldToken));
    const owner = await ownerTokenOf('order:42');
    expect(await page.content()).not.toContain(owner);

    await page.screenshot({ path: join(shots, 'held.png'), fullPage: true });
    if (process.env.DASHBOARD_SCREENSHOT) {
      mkdirSync(dirname(process.env.DASHBOARD_SCREENSHOT), { recursive: true });
      await page.screenshot({ path: process.env.DASHBOARD_SCREENSHOT, fullPage: true });
    }
    expect(readFileSync(join(shots, 'held.png')).subarray(1, 4).toString()).toBe('PNG');

    await held.release();
    await page.locator('tr[data-lock="order:42"]').waitFor({ state: 'detached' });
    expect(fails).toEqual([]);
    await page.close();
  });

  it('shows this instance’s own events on the page as they happen', async () => {
    const page = await browser.newPage();
    await page.goto(`${expressUrl}/locks`);
    await page.locator('#status.live').waitFor();
    const locks = express.get(LockService);
    await locks.withLock('report:daily', async () => {
      await page.locator('tr[data-lock="report:daily"]').waitFor();
    });
    await page.locator('#events tr[data-event="released"]', { hasText: 'report:daily' }).waitFor();
    await page.locator('#timeline svg text', { hasText: 'report:daily' }).waitFor();

    // A fair waiter here, queued behind another instance's hold, is handed the lock.
    const blocker = await other.acquire('handoff:demo', { leaseMs: 60_000, renew: false });
    const mark = webEvents.mark();
    const waiting = locks.acquire('handoff:demo', { fair: true, waitMs: 30_000 });
    await page.locator('tr[data-lock="handoff:demo"]', { hasText: 'web-1 (' }).waitFor();
    await blocker.release();
    const handed = await waiting;
    // The page shows what the engine did. That is a hand-off, unless the waiter's process was
    // starved past its place's lapse before the release (a loaded machine): it then took the
    // lock by its own next attempt, and the row says "acquired".
    const acquired = await webEvents.since(mark, { type: 'acquired', key: 'handoff:demo' });
    const shown = acquired.handedOff ? 'handed-off' : 'acquired';
    await page.locator(`#events tr[data-event="${shown}"]`, { hasText: 'handoff:demo' }).waitFor();
    await handed.release();
    await page.close();
  });

  it('force-unlocks from the page when allowForceUnlock is on', async () => {
    const held = await other.acquire('stuck:job', { leaseMs: 60_000, renew: false });
    const page = await browser.newPage();
    page.on('dialog', (dialog) => void dialog.accept());
    await page.goto(`${expressUrl}/locks`);
    await page.locator('button[data-unlock="stuck:job"]').click();
    await page.locator('tr[data-lock="stuck:job"]').waitFor({ state: 'detached' });
    expect(await server.admin.exists(`${prefix}{stuck:job}`)).toBe(0);
    await page.close();
    await held.release().catch(() => undefined);
  });

  it('answers 403 through its guard, on Fastify too, for the page, its data and its stream', async () => {
    const page = await browser.newPage();
    const refused = await page.goto(`${fastifyUrl}/ops/locks`);
    expect(refused?.status()).toBe(403);
    await page.setExtraHTTPHeaders({ 'x-admin': 'yes' });
    const allowed = await page.goto(`${fastifyUrl}/ops/locks`);
    expect(allowed?.status()).toBe(200);
    await page.locator('#status.live').waitFor();
    const held = await other.acquire('fastify:lock', { leaseMs: 60_000, renew: false });
    await page.locator('tr[data-lock="fastify:lock"]').waitFor();
    await held.release();
    await page.locator('tr[data-lock="fastify:lock"]').waitFor({ state: 'detached' });
    await page.close();

    const server = fastify.getHttpServer();
    for (const path of ['/ops/locks/api/state', '/ops/locks/api/stream']) {
      expect((await request(server).get(path)).status).toBe(403);
    }
    expect((await request(server).get('/ops/locks/api/state').set('x-admin', 'yes')).status).toBe(200);
    const stream = await firstMessages(`${fastifyUrl}/ops/locks/api/stream`, 1, { 'x-admin': 'yes' });
    expect(stream).toContain('event: state');
  });
});

describe('the dashboard’s data', () => {
  it('lists read/write holders, semaphores, leaderships and the fair queue, never an owner token', async () => {
    const locks = express.get(LockService);
    const readers: LockHandle[] = [await other.acquireRead('catalog'), await locks.acquireRead('catalog')];
    const permit = await other.semaphore('prize-office', { limit: 3 }).acquire({ permits: 2 });
    await locks.leadership('draws').campaign();
    const held = await other.acquire('queue:head', { leaseMs: 60_000, renew: false });
    const queued = locks.acquire('queue:head', { fair: true, waitMs: 30_000 });
    try {
      let state: DashboardState;
      do {
        state = (await request(express.getHttpServer()).get('/locks/api/state')).body as DashboardState;
      } while (!state.locks.some((l) => l.key === 'queue:head' && l.queue.length === 1));

      const catalog = state.locks.find((l) => l.key === 'catalog')!;
      expect(catalog.kind).toBe('read');
      expect(catalog.holders.map((h) => h.instanceId).sort()).toEqual(['web-1', 'worker-7']);
      const office = state.semaphores.find((s) => s.key === 'prize-office')!;
      expect({ limit: office.limit, used: office.used }).toEqual({ limit: 3, used: 2 });
      expect(office.holders[0].instanceId).toBe('worker-7');
      const draws = state.leaderships.find((l) => l.key === 'leader:draws')!;
      expect(draws.leading).toBe(true);
      expect(draws.latestTerm?.instanceId).toBe('web-1');
      expect(draws.recent[0].fencingToken).toBe(draws.latestTerm?.fencingToken);
      expect(draws).not.toHaveProperty('leader'); // the removed name of latestTerm
      const head = state.locks.find((l) => l.key === 'queue:head')!;
      expect(head.holders[0].instanceId).toBe('worker-7');
      expect(head.queue[0].instanceId).toBe('web-1');
      expect(head.heldForExact).toBe(false);

      const owner = await ownerTokenOf('queue:head');
      expect(JSON.stringify(state)).not.toContain(owner);
    } finally {
      await held.release();
      await (await queued).release();
      await permit.release();
      for (const r of readers) await r.release();
      await locks.leadership('draws').resign();
    }
  });

  it('refuses force-unlock when it is off, or without its header', async () => {
    const held = await other.acquire('guarded:unlock', { leaseMs: 60_000, renew: false });
    try {
      const off = await request(fastify.getHttpServer())
        .post('/ops/locks/api/unlock?key=guarded:unlock')
        .set('x-admin', 'yes')
        .set(FORCE_UNLOCK_HEADER, '1');
      expect(off.status).toBe(403);
      const forged = await request(express.getHttpServer()).post('/locks/api/unlock?key=guarded:unlock');
      expect(forged.status).toBe(403);
      expect(await server.admin.exists(`${prefix}{guarded:unlock}`)).toBe(1);
    } finally {
      await held.release();
    }
  });
});

describe('the dashboard while Redis is down', () => {
  it('says the locks are unknown, not that none is held, and comes back live', async () => {
    const own = await startRedis({ own: true });
    @Module({
      imports: [
        LockModule.forRoot({ redis: own.url, keyPrefix: uniquePrefix('dash-down'), instanceId: 'web-3' }),
        LockDashboardModule.forRoot(),
      ],
    })
    class DownModule {}
    const ref = await Test.createTestingModule({ imports: [DownModule] }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    const page = await browser.newPage();
    try {
      await page.goto(`${await app.getUrl()}/locks`);
      await page.getByText('No lock is held.').waitFor();
      await own.process!.stop();
      await page.locator('#status', { hasText: 'Redis unreachable' }).waitFor();
      await page.getByText('Unknown: Redis cannot be reached.').first().waitFor();
      expect(await page.getByText('No lock is held.').count()).toBe(0);
      await own.process!.restart();
      await page.locator('#status.live').waitFor();
      await page.getByText('No lock is held.').waitFor();
    } finally {
      await page.close();
      await app.close();
      await own.stop();
    }
  });
});
