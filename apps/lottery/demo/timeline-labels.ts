/**
 * How wide the timeline takes its monospace text to be, erring wide: a character outside ASCII
 * (✝, ✘, …) may come from a fallback font, so it counts as a full em. A label's box runs from
 * `ascentEm` above its baseline to `descentEm` below.
 *
 * @example
 * // '#…0538' at font-size 10: 5 ASCII characters and one other, so 5 × 6.2 + 10 = 41 px wide
 * const width = 5 * TEXT_METRICS.charEm * 10 + TEXT_METRICS.wideEm * 10;
 */
export const TEXT_METRICS = { charEm: 0.62, wideEm: 1, ascentEm: 0.9, descentEm: 0.3 } as const;

/** A text element of the picture: `x`/`y` as in SVG (`y` is the baseline). */
export interface Label {
  readonly x: number;
  readonly y: number;
  readonly text: string;
  readonly fontSize: number;
  readonly anchor?: 'start' | 'middle' | 'end';
}

export interface Box {
  readonly x0: number;
  readonly y0: number;
  readonly x1: number;
  readonly y1: number;
}

/** The width `text` takes at `fontSize`, by TEXT_METRICS. */
export function textWidth(text: string, fontSize: number): number {
  let ems = 0;
  for (const c of text) ems += c.charCodeAt(0) < 128 ? TEXT_METRICS.charEm : TEXT_METRICS.wideEm;
  return ems * fontSize;
}

function labelBox(label: Label): Box {
  const w = textWidth(label.text, label.fontSize);
  const x0 = label.anchor === 'middle' ? label.x - w / 2 : label.anchor === 'end' ? label.x - w : label.x;
  return {
    x0,
    x1: x0 + w,
    y0: label.y - TEXT_METRICS.ascentEm * label.fontSize,
    y1: label.y + TEXT_METRICS.descentEm * label.fontSize,
  };
}

/** Whether two boxes share any area (touching edges do not count). */
function overlaps(a: Box, b: Box): boolean {
  return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
}

function inside(inner: Box, outer: Box): boolean {
  return inner.x0 >= outer.x0 && inner.x1 <= outer.x1 && inner.y0 >= outer.y0 && inner.y1 <= outer.y1;
}

/**
 * The labels placed so far. Each new label takes the first of its candidates that stays
 * inside its bounds and overlaps no label placed before it and none of the given obstacles;
 * one with no such candidate is left out, so its detail lives only in a tooltip.
 */
export class LabelLayout {
  private readonly boxes: Box[] = [];

  constructor(private readonly bounds: Box) {}

  fits(label: Label, obstacles: readonly Box[] = [], within: Box = this.bounds): boolean {
    const box = labelBox(label);
    return (
      inside(box, within) &&
      inside(box, this.bounds) &&
      !this.boxes.some((b) => overlaps(b, box)) &&
      !obstacles.some((b) => overlaps(b, box))
    );
  }

  /** The first candidate that fits, now placed; undefined when none does. */
  place(candidates: readonly Label[], obstacles: readonly Box[] = [], within?: Box): Label | undefined {
    const chosen = candidates.find((c) => this.fits(c, obstacles, within));
    if (chosen) this.boxes.push(labelBox(chosen));
    return chosen;
  }
}

/** A mark waiting for its label: the texts to try, fullest first, and the lane it sits in. */
export interface MarkLabel {
  readonly box: Box;
  readonly lane: Box;
  readonly baseline: number;
  readonly fontSize: number;
  readonly texts: readonly string[];
}

/**
 * Places a mark's label: each of `texts` in turn on the mark itself, then, given the marks to
 * keep clear of, just after it or just before it in its lane.
 */
export function placeMarkLabel(
  layout: LabelLayout,
  mark: MarkLabel,
  texts: readonly string[],
  obstacles?: readonly Box[],
): Label | undefined {
  const { box, lane, baseline: y, fontSize } = mark;
  for (const text of texts) {
    const on = layout.place([{ x: r1(box.x0 + 3), y, text, fontSize }], [], {
      ...lane,
      x0: box.x0 + 1,
      x1: box.x1 - 1,
    });
    if (on) return on;
    if (!obstacles) continue;
    const beside: Label[] = [
      { x: r1(box.x1 + 4), y, text, fontSize },
      { x: r1(box.x0 - 4), y, text, fontSize, anchor: 'end' },
    ];
    const placed = layout.place(beside, obstacles, lane);
    if (placed) return placed;
  }
  return undefined;
}

/** Rounded to 0.1 px, as the SVG writes it: what the layout checks is what is drawn. */
export function r1(n: number): number {
  return Math.round(n * 10) / 10;
}

/** How fencing tokens are written on the picture. */
export interface TokenFormat {
  /** A token of `key` as the picture writes it; '' for none. */
  format(key: string, token: number | undefined): string;
}

/**
 * Shortens long fencing tokens (16-digit clock-seeded ones) to their last digits: at least
 * `minDigits`, and as many as the tokens of the same lock need to keep their order and stay
 * apart, so `#…0806` and `#…0810` of one lock still show which is newer. Tokens only order
 * holds of one lock, so each lock is shortened on its own; a lock not given has only the
 * token asked about. Short tokens, and the tokens of a lock whose tokens differ in length,
 * are written whole.
 *
 * @example
 * const tokens = tokenFormat([['lottery:crash-x', [1795522049470806, 1795522049470810]]]);
 * tokens.format('lottery:crash-x', 1795522049470810); // '#…0810'
 */
export function tokenFormat(tokensByKey: Iterable<readonly [string, readonly number[]]>, minDigits = 4): TokenFormat {
  const kept = new Map<string, number>();
  const seen = new Set<string>();
  for (const [key, tokens] of tokensByKey) {
    seen.add(key);
    const digits = [...new Set(tokens.filter((t) => Number.isSafeInteger(t) && t >= 0))]
      .sort((a, b) => a - b)
      .map(String);
    const length = digits[0]?.length ?? 0;
    if (length <= minDigits + 2 || digits.some((d) => d.length !== length)) continue;
    let k = minDigits;
    while (k < length && !digits.every((d, i) => i === 0 || digits[i - 1].slice(-k) < d.slice(-k))) k++;
    if (k < length) kept.set(key, k);
  }
  return {
    format: (key, token) => {
      if (token === undefined) return '';
      const text = String(token);
      // A token of a lock with no other token here needs no more digits than the fewest.
      const k = seen.has(key) ? kept.get(key) : text.length > minDigits + 2 ? minDigits : undefined;
      return k !== undefined && text.length > k ? `#…${text.slice(-k)}` : `#${text}`;
    },
  };
}

/** `text` cut to fit `width` px at `fontSize`, ending in '…' when cut. */
export function fitText(text: string, width: number, fontSize: number): string {
  if (textWidth(text, fontSize) <= width) return text;
  const chars = [...text];
  while (chars.length > 0 && textWidth(`${chars.join('')}…`, fontSize) > width) chars.pop();
  return chars.length > 0 ? `${chars.join('')}…` : '';
}

/** Splits `text` at spaces into lines no wider than `width` px. */
export function wrapText(text: string, width: number, fontSize: number): string[] {
  const lines: string[] = [];
  for (const word of text.split(' ')) {
    const last = lines.at(-1);
    if (last !== undefined && textWidth(`${last} ${word}`, fontSize) <= width)
      lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(fitText(word, width, fontSize));
  }
  return lines;
}

/** `s` safe as SVG text or attribute value. */
export function escapeXml(s: string): string {
  return s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
