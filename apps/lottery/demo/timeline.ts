import type { LotteryInstance } from './lottery-cluster';

interface Bar {
  readonly row: number;
  readonly from: number;
  readonly to: number;
  readonly label: string;
  readonly killed: boolean;
  /** The part of a dead holder's lease that ran on after it was killed. */
  readonly ghost?: boolean;
}

const ROW_H = 46;
const LEFT = 110;
const WIDTH = 1100;

/** A write the fence refused: drawn where it happened, on the row of the instance that tried it. */
export interface RefusedWrite {
  readonly instance: string;
  readonly at: number;
  readonly token: number;
}

/** The instances' lock events, as the timeline reads them. */
type TimelineInstance = Pick<LotteryInstance, 'id' | 'events' | 'killedAt'>;

/**
 * An SVG timeline of which instance held which lock when, drawn from the instances' lock
 * events, with a time axis, a legend for every mark, and the late write the fence refused.
 */
export function lockTimelineSvg(instances: readonly TimelineInstance[], refused?: RefusedWrite): string {
  const bars: Bar[] = [];
  instances.forEach((instance, row) => {
    const open = new Map<string, { t: number; token: unknown }>();
    for (const e of instance.events) {
      if (e.event !== 'lock') continue;
      const key = String(e.key);
      if (e.type === 'acquired') open.set(key, { t: e.t, token: e.token });
      else if (open.has(key)) {
        const start = open.get(key)!;
        open.delete(key);
        bars.push({ row, from: start.t, to: e.t, label: label(key, start.token), killed: false });
      }
    }
    for (const [key, start] of open) {
      const end = instance.killedAt ?? instance.events.at(-1)?.t ?? start.t;
      bars.push({
        row,
        from: start.t,
        to: end,
        label: label(key, start.token),
        killed: instance.killedAt !== undefined,
      });
    }
  });
  // A killed holder's lock stays taken until its lease runs out: show that until the next holder took it.
  for (const bar of bars.filter((b) => b.killed)) {
    const key = bar.label.split(' #')[0];
    const next = bars
      .filter((b) => !b.killed && b.label.split(' #')[0] === key && b.from >= bar.to)
      .sort((a, b) => a.from - b.from)[0];
    if (next)
      bars.push({ row: bar.row, from: bar.to, to: next.from, label: "dead holder's lease", killed: true, ghost: true });
  }
  const t0 = Math.min(...bars.map((b) => b.from));
  const t1 = Math.max(...bars.map((b) => b.to), refused?.at ?? 0, t0 + 1);
  const x = (t: number): number => LEFT + ((t - t0) / (t1 - t0)) * (WIDTH - LEFT - 20);
  const axisY = 40 + instances.length * ROW_H + 4;
  const height = axisY + 62;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="monospace" font-size="11">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="10" y="18" font-size="14" font-weight="bold">Lockwarden lottery demo: who held which lock, and when</text>`,
  ];
  instances.forEach((instance, row) => {
    const y = 40 + row * ROW_H;
    parts.push(`<text x="10" y="${y + 22}">${escape(instance.id)}${instance.killedAt ? ' ✝' : ''}</text>`);
    parts.push(`<line x1="${LEFT}" y1="${y + 36}" x2="${WIDTH - 20}" y2="${y + 36}" stroke="#ddd"/>`);
  });
  for (const b of bars) {
    const y = 40 + b.row * ROW_H;
    const w = Math.max(2, x(b.to) - x(b.from));
    const fill = b.killed
      ? '#d9534f'
      : b.label.startsWith('tick')
        ? '#5b8def'
        : b.label.startsWith('crash')
          ? '#f0ad4e'
          : '#5cb85c';
    parts.push(
      `<rect x="${x(b.from).toFixed(1)}" y="${y + 6}" width="${w.toFixed(1)}" height="26" fill="${fill}" opacity="${b.ghost ? 0.25 : 0.85}"><title>${escape(b.label)}: ${b.to - b.from} ms${b.killed ? ' (holder killed)' : ''}</title></rect>`,
      `<text x="${(x(b.from) + 3).toFixed(1)}" y="${y + (b.ghost ? 24 : 4)}" font-size="9">${escape(b.label)}</text>`,
    );
  }
  if (refused) {
    const row = instances.findIndex((i) => i.id === refused.instance);
    const y = 40 + Math.max(0, row) * ROW_H;
    parts.push(
      `<text x="${(x(refused.at) - 5).toFixed(1)}" y="${y + 25}" font-size="16" fill="#d9534f">✘</text>`,
      `<text x="${(x(refused.at) + 10).toFixed(1)}" y="${y + 42}" font-size="9" fill="#d9534f">late write #${refused.token} refused by the fence</text>`,
    );
  }
  // The time axis: a tick every round step, so a reader can tell how long each hold lasted.
  const span = t1 - t0;
  const step = [100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 60_000].find((s) => span / s <= 12) ?? 120_000;
  parts.push(`<line x1="${LEFT}" y1="${axisY}" x2="${WIDTH - 20}" y2="${axisY}" stroke="#999"/>`);
  for (let t = 0; t <= span; t += step) {
    const tx = x(t0 + t).toFixed(1);
    parts.push(
      `<line x1="${tx}" y1="${axisY}" x2="${tx}" y2="${axisY + 5}" stroke="#999"/>`,
      `<text x="${tx}" y="${axisY + 16}" fill="#666" text-anchor="middle">${t >= 1_000 ? `${t / 1_000} s` : `${t} ms`}</text>`,
    );
  }
  const legend: [string, string][] = [
    ['#5b8def', 'scheduled tick'],
    ['#5cb85c', 'HTTP draw'],
    ['#f0ad4e', 'crash-round draw'],
    ['#d9534f', 'holder killed'],
  ];
  const legendY = axisY + 40;
  legend.forEach(([color, text], i) => {
    parts.push(
      `<rect x="${LEFT + i * 150}" y="${legendY - 10}" width="12" height="12" fill="${color}"/>`,
      `<text x="${LEFT + 16 + i * 150}" y="${legendY}">${text}</text>`,
    );
  });
  parts.push(
    `<text x="${LEFT}" y="${legendY + 16}" fill="#333">#n: the fencing token of that hold · ✝: the instance was SIGKILLed · faint red: its lease running out after it died · ✘: a write the fence refused</text>`,
    '</svg>',
  );
  return parts.join('\n');
}

function label(key: string, token: unknown): string {
  return `${key.replace(/^lottery:/, '').replace(/^tick-\d{4}-\d\d-\d\dT/, 'tick ')} #${String(token)}`;
}

function escape(s: string): string {
  return s.replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`);
}
