import { holdsOf, packLanes, permitBursts } from './timeline-holds';
import type { Hold, TimelineInstance } from './timeline-holds';
import { escapeXml, fitText, LabelLayout, placeMarkLabel, r1, tokenFormat } from './timeline-labels';
import type { Box, Label, MarkLabel } from './timeline-labels';
import { legendSvg } from './timeline-legend';
import { axisSvg, barLabels, barSvg, burstSvg, COLORS, textSvg } from './timeline-marks';

export type { TimelineEvent, TimelineInstance } from './timeline-holds';
export { TEXT_METRICS } from './timeline-labels';

/** A write the fence refused: drawn where it happened, on the row of the instance that tried it. */
export interface RefusedWrite {
  readonly instance: string;
  readonly at: number;
  readonly token: number;
}

export interface TimelineOptions {
  /** Semaphores whose permits are drawn grouped, in a band under each instance's locks (default: the prize office's). */
  readonly permitKeys?: readonly string[];
  /** The picture's width in px (default 1100). */
  readonly width?: number;
  /** The heading over the picture. */
  readonly title?: string;
}

const LEFT = 120;
const RIGHT = 20;
const ROWS_TOP = 30;
const LANE_H = 22;
const BAND_H = 16;
const PAD = 5;
const BAR_FONT = 10;
const PERMIT_FONT = 9;
/** Permit grants closer together than this many px join one burst. */
const BURST_GAP_PX = 8;
const TITLE = 'Lockwarden lottery demo: who held which lock, and when';

/** A mark waiting for its label, and its group in `shapes`, left open for the label. */
interface Pending extends MarkLabel {
  readonly shape: number;
  /** Lower goes first: a killed holder's lock, then the other locks, then the permit bursts. */
  readonly rank: number;
}

/**
 * An SVG timeline of which instance held which lock when, drawn from the instances' lock
 * events: one row per instance, its overlapping holds on lanes of their own, the permits of
 * `permitKeys` grouped into one mark per burst, a time axis, the late write the fence refused,
 * and a legend for every mark. Fencing tokens are shortened on the picture (see tokenFormat)
 * and written whole in each mark's tooltip. No two labels overlap, by TEXT_METRICS: a label
 * with no room takes a shorter text or is left out, and its mark's tooltip still says it all.
 * Pure and self-contained (no Node API), so a browser page can draw the same picture.
 *
 * @example
 * // In Node: the demo's picture of its cluster, with the late write its crash round tried.
 * writeFileSync('lock-timeline.svg', lockTimelineSvg(cluster.instances, { instance: 'lottery-1', at, token }));
 * // In a page: the same picture of instances fetched as JSON.
 * container.innerHTML = lockTimelineSvg(instances, undefined, { width: container.clientWidth });
 */
export function lockTimelineSvg(
  instances: readonly TimelineInstance[],
  refused?: RefusedWrite,
  options: TimelineOptions = {},
): string {
  const width = options.width ?? 1100;
  const permitKeys = new Set(options.permitKeys ?? ['lottery:prize-office']);
  const holds = holdsOf(instances, permitKeys);
  const t0 = holds.reduce((t, h) => Math.min(t, h.from), refused?.at ?? holds[0]?.from ?? 0);
  const t1 = holds.reduce((t, h) => Math.max(t, h.leaseUntil ?? h.to), Math.max(t0 + 1, refused?.at ?? t0));
  const pxPerMs = (width - LEFT - RIGHT) / (t1 - t0);
  const x = (t: number): number => r1(LEFT + (t - t0) * pxPerMs);
  const extent = (from: number, to: number): [number, number] => [x(from), Math.max(x(to), x(from) + 2)];
  const bursts = permitBursts(holds, BURST_GAP_PX / pxPerMs);
  const tokens = tokenFormat(tokensByKey(holds));
  let shortened = false;
  const token = (key: string, fence: number | undefined): string => {
    const text = tokens.format(key, fence);
    shortened ||= text.startsWith('#…');
    return text;
  };

  const shapes: string[] = [];
  const texts: string[] = [];
  const pending: Pending[] = [];
  const layout = new LabelLayout({ x0: 0, y0: 0, x1: width, y1: Number.MAX_SAFE_INTEGER });
  const put = (label: Label | undefined, attrs = ''): void => {
    if (label) texts.push(textSvg(label, attrs));
  };
  const title = fitText(options.title ?? TITLE, width - 20, 14);
  put(layout.place([{ x: 10, y: 18, text: title, fontSize: 14 }]), 'font-weight="bold"');

  let top = ROWS_TOP;
  instances.forEach((instance, row) => {
    const lanes = packLanes(
      holds.filter((h) => h.row === row && !h.permit),
      (h) => extent(h.from, h.leaseUntil ?? h.to),
      1,
    );
    const myBursts = bursts.filter((b) => b.row === row);
    const lanesTop = top + PAD;
    const bandTop = lanesTop + Math.max(1, lanes.length) * LANE_H;
    const refusedTop = bandTop + (myBursts.length > 0 ? BAND_H : 0);
    const mine = refused !== undefined && refused.instance === instance.id ? refused : undefined;
    const bottom = refusedTop + (mine ? LANE_H : 0) + PAD;
    const lane = (y0: number, h: number): Box => ({ x0: LEFT, x1: width - 2, y0, y1: y0 + h });

    const name = `${instance.id}${instance.killedAt !== undefined ? ' ✝' : ''}`;
    const shown = layout.place([{ x: 10, y: lanesTop + 15, text: fitText(name, LEFT - 24, 11), fontSize: 11 }]);
    if (shown) texts.push(`<g><title>${escapeXml(name)}</title>${textSvg(shown)}</g>`);
    shapes.push(`<line x1="${LEFT}" y1="${bottom}" x2="${width - RIGHT}" y2="${bottom}" stroke="#ddd"/>`);
    lanes.forEach((laneHolds, i) => {
      const laneTop = lanesTop + i * LANE_H;
      for (const hold of laneHolds) {
        const [x0, x1] = extent(hold.from, hold.leaseUntil ?? hold.to);
        const box = { x0, x1, y0: laneTop + 2, y1: laneTop + 20 };
        const tok = token(hold.key, hold.token);
        pending.push({
          box,
          lane: lane(laneTop, LANE_H),
          baseline: laneTop + 15,
          fontSize: BAR_FONT,
          texts: barLabels(hold, tok),
          shape: shapes.push(barSvg(hold, instance.id, box, x, tok)) - 1,
          rank: hold.end === 'killed' ? 0 : 1,
        });
      }
    });
    for (const burst of myBursts) {
      const [x0, x1] = extent(burst.from, burst.to);
      const box = { x0, x1, y0: bandTop + 3, y1: bandTop + 13 };
      const n = burst.holds.length;
      pending.push({
        box,
        lane: lane(bandTop, BAND_H),
        baseline: bandTop + 12,
        fontSize: PERMIT_FONT,
        texts: [`${n} permit${n === 1 ? '' : 's'}`, `${n}×`],
        shape: shapes.push(burstSvg(burst, instance.id, box)) - 1,
        rank: 2,
      });
    }
    if (mine) {
      // Its token is the dead holder's: written as that lock's tokens are.
      const of = holds.find((h) => h.row === row && h.token === mine.token && !h.permit);
      const at = x(mine.at);
      const tok = token(of?.key ?? '', mine.token);
      const tip = `${mine.instance} wrote with its old token #${mine.token} after it lost the lock: the fence refused it`;
      shapes.push(refusedLine(at, lanesTop, refusedTop));
      const labels = refusedLabels(layout, at, refusedTop, lane(refusedTop, LANE_H), tok);
      texts.push(`<g fill="#d9534f"><title>${escapeXml(tip)}</title>${labels.map((l) => textSvg(l)).join('')}</g>`);
    }
    top = bottom;
  });

  // Every label first tries its fullest text on its own mark; then beside it, then shorter texts.
  const obstacles = pending.map((p) => p.box);
  const unlabelled = [...pending].sort((a, b) => a.rank - b.rank || a.box.x0 - b.box.x0);
  for (const round of [0, 1]) {
    for (const p of [...unlabelled]) {
      const label = placeMarkLabel(
        layout,
        p,
        round === 0 ? p.texts.slice(0, 1) : p.texts,
        round === 1 ? obstacles : undefined,
      );
      if (!label) continue;
      unlabelled.splice(unlabelled.indexOf(p), 1);
      shapes[p.shape] += textSvg(label);
    }
  }
  for (const p of pending) shapes[p.shape] += '</g>';

  const axisY = top + 6;
  const axis = axisSvg(t0, t1, x, axisY, [LEFT, width - RIGHT], (label) => layout.place([label]));
  const legend = legendSvg({
    top: axisY + 30,
    width,
    left: LEFT,
    colors: COLORS,
    shortened,
    permitKeys: [...permitKeys],
  });
  for (const { label, attrs } of legend.labels) put(layout.place([label]), attrs);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${legend.bottom}" font-family="monospace" font-size="11">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    ...shapes,
    ...axis,
    ...legend.shapes,
    ...texts,
    '</svg>',
  ].join('\n');
}

function tokensByKey(holds: readonly Hold[]): Map<string, number[]> {
  const byKey = new Map<string, number[]>();
  for (const h of holds) {
    if (h.token === undefined) continue;
    const tokens = byKey.get(h.key);
    if (tokens) tokens.push(h.token);
    else byKey.set(h.key, [h.token]);
  }
  return byKey;
}

function refusedLine(x: number, top: number, refusedTop: number): string {
  return `<line x1="${x}" y1="${top}" x2="${x}" y2="${refusedTop + 4}" stroke="#d9534f" stroke-dasharray="2 3"/>`;
}

/** The refused write's ✘ in its own lane, and what it was, on whichever side has room. */
function refusedLabels(layout: LabelLayout, x: number, top: number, lane: Box, token: string): Label[] {
  const mark = layout.place([{ x, y: top + 16, text: '✘', fontSize: 14, anchor: 'middle' }]);
  const texts = [`late write ${token} refused by the fence`, `late write ${token} refused`, `${token} refused`];
  const candidates = texts.flatMap((text): Label[] => [
    { x: r1(x + 10), y: top + 15, text, fontSize: BAR_FONT },
    { x: r1(x - 10), y: top + 15, text, fontSize: BAR_FONT, anchor: 'end' },
  ]);
  const label = layout.place(candidates, [], lane);
  return [mark, label].filter((l): l is Label => l !== undefined);
}
