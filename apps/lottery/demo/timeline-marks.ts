import type { Hold, PermitBurst } from './timeline-holds';
import { escapeXml, r1 } from './timeline-labels';
import type { Box, Label } from './timeline-labels';

export type Kind = 'job' | 'tick' | 'crash' | 'draw';

export const COLORS: Readonly<Record<Kind | 'killed' | 'permit', string>> = {
  job: '#a9c4f5',
  tick: '#5b8def',
  draw: '#5cb85c',
  crash: '#f0ad4e',
  killed: '#d9534f',
  permit: '#9b7fd0',
};

export function kindOf(key: string): Kind {
  if (key === 'lottery:draws') return 'job';
  if (key.startsWith('lottery:tick-')) return 'tick';
  if (key.startsWith('lottery:crash-')) return 'crash';
  return 'draw';
}

/** A key as the picture names it: without the app's prefix, a tick's draw by its time of day. */
export function nameOf(key: string): string {
  return key
    .replace(/^lottery:/, '')
    .replace(/^tick-\d{4}-\d\d-\d\dT(\d\d:\d\d:\d\d)(\.\d+)?Z$/, (_, time: string, ms?: string) =>
      ms && Number(ms.slice(1)) > 0 ? `tick ${time}${ms}` : `tick ${time}`,
    );
}

/** What a hold's label may say, fullest first: a label with no room tries the next. */
export function barLabels(hold: Hold, token: string): string[] {
  const full = [nameOf(hold.key), token].filter(Boolean).join(' ');
  const variants = hold.end === 'killed' ? [`${full}, holder killed`, full] : [full];
  return [...new Set([...variants, token, nameOf(hold.key)].filter(Boolean))];
}

/**
 * A hold's bar, with everything about it in its tooltip, as an open group: its label, once
 * placed, goes inside, so hovering the label shows the same tooltip.
 */
export function barSvg(hold: Hold, instance: string, box: Box, x: (t: number) => number, token: string): string {
  const killed = hold.end === 'killed';
  const solid = Math.max(2, Math.min(box.x1, x(hold.to)) - box.x0);
  const ended = hold.end === 'lost' ? ', then lost it' : hold.end === 'open' ? ', and still held it' : '';
  const tip = [
    `${hold.key}${hold.token === undefined ? '' : ` #${hold.token}`}${token ? ` (${token} on the picture)` : ''}`,
    `held by ${instance} for ${hold.to - hold.from} ms${ended}`,
    ...(killed ? [`${instance} was killed holding it`] : []),
    ...(hold.leaseUntil === undefined
      ? []
      : [`its lease ran on ${hold.leaseUntil - hold.to} ms, until the next holder took the lock`]),
  ].join('\n');
  const fill = killed ? COLORS.killed : COLORS[kindOf(hold.key)];
  const h = box.y1 - box.y0;
  const parts = [
    `<g><title>${escapeXml(tip)}</title>`,
    `<rect x="${box.x0}" y="${box.y0}" width="${r1(solid)}" height="${h}" fill="${fill}" opacity="0.85"/>`,
  ];
  if (hold.leaseUntil !== undefined && box.x1 > box.x0 + solid) {
    const lease = r1(box.x1 - box.x0 - solid);
    parts.push(
      `<rect x="${r1(box.x0 + solid)}" y="${box.y0}" width="${lease}" height="${h}" fill="${COLORS.killed}" opacity="0.25"/>`,
    );
  }
  return parts.join('');
}

/** A burst of permit grants as one mark (an open group, like a bar); each grant in its tooltip. */
export function burstSvg(burst: PermitBurst, instance: string, box: Box): string {
  const lines = burst.holds.map((h) => `${h.token === undefined ? 'no token' : `#${h.token}`}: ${h.to - h.from} ms`);
  const fences = burst.holds.flatMap((h) => (h.token === undefined ? [] : [h.token])).sort((a, b) => a - b);
  const range = fences.length > 0 ? `, tokens #${fences[0]} to #${fences[fences.length - 1]}` : '';
  const tip = [
    `${burst.holds.length} ${burst.key} permit(s) held by ${instance} over ${burst.to - burst.from} ms${range}:`,
    ...lines.slice(0, 24),
    ...(lines.length > 24 ? [`and ${lines.length - 24} more`] : []),
  ].join('\n');
  const w = r1(box.x1 - box.x0);
  return `<g><title>${escapeXml(tip)}</title><rect x="${box.x0}" y="${box.y0}" width="${w}" height="${box.y1 - box.y0}" fill="${COLORS.permit}" opacity="0.85"/>`;
}

/** The time axis, with a tick every round step, so a reader can tell how long each hold lasted. */
export function axisSvg(
  t0: number,
  t1: number,
  x: (t: number) => number,
  y: number,
  [left, right]: readonly [number, number],
  place: (label: Label) => Label | undefined,
): string[] {
  const span = t1 - t0;
  const step = [100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 60_000].find((s) => span / s <= 12) ?? 120_000;
  const parts = [`<line x1="${left}" y1="${y}" x2="${right}" y2="${y}" stroke="#999"/>`];
  for (let t = 0; t <= span; t += step) {
    parts.push(`<line x1="${x(t0 + t)}" y1="${y}" x2="${x(t0 + t)}" y2="${y + 5}" stroke="#999"/>`);
    const text = t >= 1_000 ? `${t / 1_000} s` : `${t} ms`;
    const label = place({ x: x(t0 + t), y: y + 17, text, fontSize: 10, anchor: 'middle' });
    if (label) parts.push(textSvg(label, 'fill="#666"'));
  }
  return parts;
}

export function textSvg(label: Label, attrs = ''): string {
  const anchor = label.anchor && label.anchor !== 'start' ? ` text-anchor="${label.anchor}"` : '';
  const extra = attrs ? ` ${attrs}` : '';
  return `<text x="${label.x}" y="${label.y}" font-size="${label.fontSize}"${anchor}${extra}>${escapeXml(label.text)}</text>`;
}
