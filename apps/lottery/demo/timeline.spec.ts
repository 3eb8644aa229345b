import fc from 'fast-check';
import { lockTimelineSvg, TEXT_METRICS } from './timeline';
import type { RefusedWrite, TimelineEvent, TimelineInstance } from './timeline';
import { tokenFormat } from './timeline-labels';

const lock = (t: number, type: string, key: string, token: number) => ({ event: 'lock', t, type, key, token });

describe('the lock timeline', () => {
  const instances = [
    { id: 'lottery-1', killedAt: 1_900, events: [lock(1_000, 'acquired', 'lottery:crash-x', 41)] },
    {
      id: 'lottery-2',
      killedAt: undefined,
      events: [lock(3_500, 'acquired', 'lottery:crash-x', 42), lock(4_700, 'released', 'lottery:crash-x', 42)],
    },
  ];
  const svg = lockTimelineSvg(instances, { instance: 'lottery-1', at: 5_000, token: 41 });

  it('draws a time axis with ticks, so hold times can be read off it', () => {
    expect(svg).toContain('>0 ms<');
    expect(svg).toContain('>1 s<');
    expect(svg).toContain('>4 s<');
  });

  it('explains every mark in its legend: fencing tokens, the killed instance, the refused write', () => {
    expect(svg).toContain('crash-x #41');
    expect(svg).toContain('lottery-1 ✝');
    expect(svg).toMatch(/#n: the fencing token of that hold/);
    expect(svg).toMatch(/✝: the instance was SIGKILLed/);
    expect(svg).toMatch(/✘: a write the fence refused/);
  });

  it("draws the dead holder's late write that the fence refused, on its row", () => {
    expect(svg).toContain('late write #41 refused by the fence');
  });
});

/** Every <text> of a rendered picture, as a box by TEXT_METRICS, and the picture's size. */
function textBoxes(svg: string) {
  const size = /<svg [^>]*width="([\d.]+)" height="([\d.]+)"/.exec(svg)!;
  const attr = (attrs: string, name: string): string | undefined => new RegExp(`${name}="([^"]*)"`).exec(attrs)?.[1];
  const boxes = [...svg.matchAll(/<text ([^>]*)>([^<]*)<\/text>/g)].map(([, attrs, raw]) => {
    const text = raw.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));
    const fontSize = Number(attr(attrs, 'font-size'));
    const width = [...text].reduce(
      (w, c) => w + fontSize * (c.charCodeAt(0) < 128 ? TEXT_METRICS.charEm : TEXT_METRICS.wideEm),
      0,
    );
    const anchor = attr(attrs, 'text-anchor') ?? 'start';
    const x = Number(attr(attrs, 'x')) - (anchor === 'middle' ? width / 2 : anchor === 'end' ? width : 0);
    const y = Number(attr(attrs, 'y'));
    return {
      text,
      x0: x,
      x1: x + width,
      y0: y - TEXT_METRICS.ascentEm * fontSize,
      y1: y + TEXT_METRICS.descentEm * fontSize,
    };
  });
  return { width: Number(size[1]), height: Number(size[2]), boxes };
}

type Box = ReturnType<typeof textBoxes>['boxes'][number];

function overlapping(boxes: readonly Box[]): [string, string][] {
  const pairs: [string, string][] = [];
  boxes.forEach((a, i) => {
    for (const b of boxes.slice(i + 1)) {
      if (a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1) pairs.push([a.text, b.text]);
    }
  });
  return pairs;
}

/** What one instance did in a generated run; times are fractions of the run. */
const instanceArb = fc.record({
  id: fc.oneof(
    fc.constant(''),
    fc.constant('lottery-instance-with-a-rather-long-name'),
    fc.string({ minLength: 1, maxLength: 14 }),
  ),
  holds: fc.array(
    fc.record({
      kind: fc.constantFrom('draws', 'tick', 'http', 'prize', 'crash'),
      at: fc.double({ min: 0, max: 1, noNaN: true }),
      // Short sections (a few ms, however long the run) and long ones (most of the run).
      length: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.double({ min: 0, max: 1, noNaN: true })),
    }),
    { maxLength: 10 },
  ),
  bursts: fc.array(
    fc.record({
      at: fc.double({ min: 0, max: 1, noNaN: true }),
      grants: fc.integer({ min: 1, max: 40 }),
      grantMs: fc.integer({ min: 0, max: 80 }),
    }),
    { maxLength: 6 },
  ),
  killedAt: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
});

const runArb = fc.record({
  spanMs: fc.constantFrom(30, 2_000, 14_000, 600_000),
  clockTokens: fc.boolean(),
  width: fc.constantFrom(480, 800, 1100),
  start: fc.integer({ min: 1_795_000_000_000, max: 1_799_000_000_000 }),
  instances: fc.array(instanceArb, { minLength: 1, maxLength: 10 }),
  refused: fc.option(fc.record({ row: fc.nat(), at: fc.double({ min: 0, max: 1, noNaN: true }) }), { nil: undefined }),
});

type Run = typeof runArb extends fc.Arbitrary<infer T> ? T : never;

/**
 * Lock lines as the lottery reports them: 16-digit tokens seeded from the server clock in µs,
 * permits of the prize office three at a time, and a killed instance reporting nothing after.
 */
function lotteryRun(run: Run): { instances: TimelineInstance[]; refused?: RefusedWrite } {
  // Per lock, max(last + 1, server µs) with the clock (scripts), or a counter seeded from it once.
  const last = new Map<string, number>();
  const token = (key: string, t: number): number => {
    const previous = last.get(key);
    const next =
      previous === undefined || run.clockTokens ? Math.max((previous ?? 0) + 1, t * 1_000 + 7) : previous + 1;
    last.set(key, next);
    return next;
  };
  const at = (fraction: number): number => run.start + Math.round(fraction * run.spanMs);
  const instances = run.instances.map((spec, row): TimelineInstance => {
    const events: TimelineEvent[] = [];
    const hold = (key: string, from: number, to: number): void => {
      const fence = token(key, from);
      events.push(lock(from, 'acquired', key, fence), lock(to, 'released', key, fence));
    };
    spec.holds.forEach((h, i) => {
      const from = at(h.at);
      const to = Number.isInteger(h.length) ? from + h.length : from + Math.round(h.length * run.spanMs);
      const tick = `tick-${new Date(from - (from % 5_000)).toISOString()}`;
      const key = { draws: 'draws', tick, http: `http-mx${i}`, prize: `prize-mx-${i}`, crash: 'crash-mx' }[h.kind];
      hold(`lottery:${key}`, from, to);
    });
    for (const burst of spec.bursts) {
      for (let g = 0; g < burst.grants; g++) {
        const from = at(burst.at) + Math.floor(g / 3) * burst.grantMs;
        hold('lottery:prize-office', from, from + burst.grantMs);
      }
    }
    const killedAt = spec.killedAt === undefined ? undefined : at(spec.killedAt);
    const lines = events.filter((e) => killedAt === undefined || e.t <= killedAt).sort((a, b) => a.t - b.t);
    return { id: spec.id || `lottery-${row + 1}`, events: lines, killedAt };
  });
  if (!run.refused) return { instances };
  const victim = instances[run.refused.row % instances.length];
  const stale = victim.events.find((e) => e.type === 'acquired')?.token;
  const fence = typeof stale === 'number' ? stale : token('lottery:crash-mx', at(0));
  return { instances, refused: { instance: victim.id, at: at(run.refused.at), token: fence } };
}

describe('the lock timeline, for any run', () => {
  it('places every label inside the picture, and no label over another', () => {
    fc.assert(
      fc.property(runArb, (spec) => {
        const run = lotteryRun(spec);
        const svg = lockTimelineSvg(run.instances, run.refused, { width: spec.width });
        const { width, height, boxes } = textBoxes(svg);
        expect(width).toBe(spec.width);
        const outside = boxes.filter((b) => !(b.x0 >= 0 && b.y0 >= 0 && b.x1 <= width && b.y1 <= height));
        expect(outside.map((b) => b.text)).toEqual([]);
        expect(overlapping(boxes)).toEqual([]);
        expect(boxes.length).toBeGreaterThan(0);
      }),
      { numRuns: 150 },
    );
  });

  it('writes no 16-digit token whole on the picture, and every token whole in a tooltip', () => {
    fc.assert(
      fc.property(runArb, (spec) => {
        const run = lotteryRun(spec);
        const svg = lockTimelineSvg(run.instances, run.refused);
        const { boxes } = textBoxes(svg);
        expect(boxes.filter((b) => /#\d{7}/.test(b.text)).map((b) => b.text)).toEqual([]);
        const locks = run.instances.flatMap((i) => i.events.filter((e) => e.key !== 'lottery:prize-office'));
        for (const e of locks) expect(svg).toContain(`#${String(e.token)}`);
      }),
      { numRuns: 50 },
    );
  });

  it('shortens the tokens of each lock to digits that keep their order and tell them apart', () => {
    const tokensArb = fc.array(fc.integer({ min: 1_795_000_000_000_000, max: 1_799_999_999_999_999 }), {
      minLength: 1,
      maxLength: 30,
    });
    fc.assert(
      fc.property(
        fc.array(fc.tuple(tokensArb, fc.integer({ min: 1, max: 10 ** 9 })), { minLength: 1, maxLength: 4 }),
        (locks) => {
          // Tokens of one lock: a seed, then within `spread` of it (a counter, or a clock that moved on).
          const byKey = locks.map(([seeds, spread], i): [string, number[]] => [
            `k${i}`,
            seeds.map((s) => seeds[0] + (s % spread)),
          ]);
          const { format } = tokenFormat(byKey);
          for (const [key, tokens] of byKey) {
            const shown = [...new Set(tokens)].sort((a, b) => a - b).map((t) => format(key, t));
            const digits = shown.map((s) => s.replace(/^#…?/, ''));
            expect(shown.every((s) => s.startsWith('#…'))).toBe(true);
            expect(digits.every((d) => d.length === digits[0].length && d.length >= 4)).toBe(true);
            expect([...digits].sort()).toEqual(digits);
            expect(new Set(digits).size).toBe(digits.length);
          }
        },
      ),
    );
  });

  it("writes the demo's crash round with short tokens that still show the takeover's is newer", () => {
    const [victim, heir] = [1_795_522_049_470_806, 1_795_522_049_470_810];
    const svg = lockTimelineSvg(
      [
        { id: 'lottery-1', killedAt: 1_000, events: [lock(990, 'acquired', 'lottery:crash-mx', victim)] },
        {
          id: 'lottery-2',
          events: [
            lock(2_500, 'acquired', 'lottery:crash-mx', heir),
            lock(3_800, 'released', 'lottery:crash-mx', heir),
          ],
        },
      ],
      { instance: 'lottery-1', at: 4_000, token: victim },
    );
    const texts = textBoxes(svg).boxes.map((b) => b.text);
    expect(texts).toEqual(expect.arrayContaining(['crash-mx #…0810', 'late write #…0806 refused by the fence']));
    expect(texts.some((t) => t.startsWith('crash-mx #…0806'))).toBe(true);
    expect(svg).toContain(`crash-mx #${victim}`);
    expect(svg).toMatch(/#…n: the fencing token of that hold, by its last digits/);
  });

  it("groups a prize office's permits: one label for a burst of grants, not one for each", () => {
    const start = 1_795_504_411_000;
    const instances = [1, 2, 3].map((n) => {
      const events = Array.from({ length: 30 }, (_, g) => {
        const from = start + n * 2_000 + Math.floor(g / 3) * 40;
        const fence = from * 1_000 + g;
        return [
          lock(from, 'acquired', 'lottery:prize-office', fence),
          lock(from + 40, 'released', 'lottery:prize-office', fence),
        ];
      }).flat();
      return { id: `lottery-${n}`, events, killedAt: undefined };
    });
    const svg = lockTimelineSvg(instances);
    const { boxes } = textBoxes(svg);
    // Overlapping permits of one instance are told apart by token: each grant held its 40 ms.
    const grants = [...svg.matchAll(/#\d{16}: (\d+) ms/g)].map((m) => m[1]);
    expect(grants).toHaveLength(3 * 24);
    expect(new Set(grants)).toEqual(new Set(['40']));
    expect(boxes.filter((b) => /^\d+ permits?$|^\d+×$/.test(b.text)).map((b) => b.text)).toEqual([
      '30 permits',
      '30 permits',
      '30 permits',
    ]);
  });
});
