import { textWidth, wrapText } from './timeline-labels';
import type { Label } from './timeline-labels';

export interface LegendInput {
  readonly top: number;
  readonly width: number;
  readonly left: number;
  readonly colors: Readonly<Record<'job' | 'tick' | 'draw' | 'crash' | 'killed' | 'permit', string>>;
  /** Whether a token on the picture is shortened: the legend then says how. */
  readonly shortened: boolean;
  readonly permitKeys: readonly string[];
}

export interface Legend {
  readonly shapes: string[];
  readonly labels: { readonly label: Label; readonly attrs: string }[];
  /** Where the picture can end. */
  readonly bottom: number;
}

const FONT = 11;
const LINE = 16;

/**
 * The legend under the time axis: a swatch for every colour, then a line for each sign and
 * for how tokens and permits are written. Laid out line by line, so no two of its labels meet.
 */
export function legendSvg(input: LegendInput): Legend {
  const { colors, left, width } = input;
  const shapes: string[] = [];
  const labels: Legend['labels'] = [];
  const swatches: [string, string][] = [
    [colors.job, 'scheduled job (draws)'],
    [colors.tick, 'scheduled tick draw'],
    [colors.draw, 'HTTP draw'],
    [colors.crash, 'crash-round draw'],
    [colors.killed, 'holder killed'],
    [colors.permit, 'permits, grouped'],
  ];
  let x = left;
  let y = input.top;
  for (const [color, text] of swatches) {
    const w = 16 + textWidth(text, FONT) + 18;
    if (x > left && x + w > width - 10) {
      x = left;
      y += LINE;
    }
    shapes.push(`<rect x="${x}" y="${y - 10}" width="12" height="12" fill="${color}"/>`);
    labels.push({ label: { x: x + 16, y, text, fontSize: FONT }, attrs: '' });
    x += w;
  }
  const keys = input.permitKeys.map((k) => k.replace(/^lottery:/, '')).join(', ');
  const notes = [
    input.shortened
      ? '#…n: the fencing token of that hold, by its last digits: as many as keep the tokens of one lock in order (hover a mark for the whole token)'
      : '#n: the fencing token of that hold',
    '✝: the instance was SIGKILLed · faint red: its lease running out after it died · ✘: a write the fence refused',
    ...(keys
      ? [
          `n permits (or n×): that many ${keys} permits one instance held close together, drawn as one mark (hover it for each permit's token and time)`,
        ]
      : []),
  ];
  y += 6;
  for (const note of notes) {
    for (const line of wrapText(note, width - 20, FONT)) {
      y += LINE;
      labels.push({ label: { x: 10, y, text: line, fontSize: FONT }, attrs: 'fill="#333"' });
    }
  }
  return { shapes, labels, bottom: y + 10 };
}
