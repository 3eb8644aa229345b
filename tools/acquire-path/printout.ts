// What `npm run acquire-path` prints: one line per library file in each section, and the text
// docs/how-it-works.md shows.
import { relative, resolve, sep } from 'node:path';
import type { Node } from 'typescript';
import type { Reading } from './reading';

export const LIB = resolve(__dirname, '../../libs/lockwarden/src');

/** The printout's lines wrap here, to read in the doc without scrolling far. */
const LINE_WIDTH = 110;

export function inLibrary(file: string): boolean {
  return resolve(file).startsWith(LIB + sep);
}

/** One file of a section: its path in the library, and the names of what ran or is looked up there. */
export interface FileLine {
  readonly file: string;
  readonly names: readonly string[];
}

/** What the tool prints, as data (`--json`). */
export interface Printout {
  /** The files one warm, uncontended call runs, in the order it first enters them, with their functions. */
  readonly runs: readonly FileLine[];
  /** The files a reader opens to follow it, though none of their code runs, with what is looked up there. */
  readonly opened: readonly FileLine[];
  /** What runs from the method's return until the call settles. */
  readonly release: readonly FileLine[];
  /** A second caller waits, then gets the lock: the files that run beyond `runs` and `opened`. */
  readonly contended: readonly FileLine[];
  readonly contendedOpened: readonly FileLine[];
  /** A watchdog renewal of a held lease: every file that runs. */
  readonly renewal: readonly FileLine[];
  readonly renewalOpened: readonly FileLine[];
  /** The uncontended call again, without OpenTelemetry: every file that runs. */
  readonly withoutOtel: readonly FileLine[];
  /** Each A → B → A of the uncontended call, with the function entered. */
  readonly bounces: readonly string[];
}

/** Turns named nodes into one line per library file: the names in source order, once each. */
export class Lines {
  constructor(private readonly reading: Reading) {}

  /** Files in `order` first, in that order, then the rest by path; none of `leaveOut`. */
  of(
    named: readonly [Node, string][],
    order: readonly string[] = [],
    leaveOut: ReadonlySet<string> = new Set(),
  ): FileLine[] {
    const byFile = new Map<string, [Node, string][]>();
    for (const [node, name] of named) {
      const path = this.reading.fileOf(node);
      const file = relative(LIB, path);
      if (!inLibrary(path) || leaveOut.has(file)) continue;
      byFile.set(file, [...(byFile.get(file) ?? []), [node, name]]);
    }
    const rank = (file: string): number => (order.includes(file) ? order.indexOf(file) : order.length);
    return [...byFile.keys()]
      .sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))
      .map((file) => {
        const inFile = byFile.get(file)!.sort(([a], [b]) => a.pos - b.pos);
        return { file, names: [...new Set(inFile.map(([, name]) => name))] };
      });
  }

  files(...sections: (readonly FileLine[])[]): Set<string> {
    return new Set(sections.flatMap((s) => s.map((l) => l.file)));
  }
}

export function render(p: Printout): string {
  const sections = [p.runs, p.opened, p.release, p.contended, p.contendedOpened, p.renewal, p.renewalOpened];
  const width = Math.max(...[...sections, p.withoutOtel].flat().map((l) => l.file.length));
  const block = (lines: readonly FileLine[]): string[] =>
    lines.length === 0 ? ['  (none)'] : lines.flatMap((l) => wrap(`  ${l.file.padEnd(width)}  `, l.names));
  const files = (lines: readonly FileLine[]): string =>
    lines
      .map((l) => l.file)
      .sort()
      .join();
  const otherwise = p.withoutOtel.filter((l) => {
    const withOtel = p.runs.find((r) => r.file === l.file);
    return !withOtel || withOtel.names.join() !== l.names.join();
  });
  const gone = p.runs.filter((r) => !p.withoutOtel.some((l) => l.file === r.file));
  return [
    "One warm @Locked('draw:{0}') call on a name never used before, uncontended, with OpenTelemetry's metrics",
    'and traces on.',
    '',
    'The library files that run (grant, method and release), in the order the call first enters them:',
    ...block(p.runs),
    '',
    'The files a reader opens to follow it, though none of their code runs, with what is looked up there:',
    ...block(p.opened),
    '',
    "The release, from the method's return until the call settles:",
    ...block(p.release),
    '',
    'Contended: a second caller waits while the first holds, then gets the lock. The files that run beyond',
    'those above:',
    ...block(p.contended),
    'and the files opened to follow them:',
    ...block(p.contendedOpened),
    '',
    'A watchdog renewal of a held lease:',
    ...block(p.renewal),
    'and the files opened to follow it, beyond those above:',
    ...block(p.renewalOpened),
    '',
    `Without OpenTelemetry (no metrics, no traces), ${files(p.withoutOtel) === files(p.runs) ? 'the same files run' : 'other files run'}; those where other functions run:`,
    ...block(otherwise),
    ...(gone.length > 0 ? ['and those that no longer run:', ...block(gone)] : []),
    '',
    "Bounces on the way in and out (a call from file B back into file A while A's call into B is under way):",
    ...(p.bounces.length === 0 ? ['  (none)'] : p.bounces.map((b) => `  ${b}`)),
  ].join('\n');
}

/** The names after `lead`, on as many lines as fit in LINE_WIDTH, the later ones under the first name. */
function wrap(lead: string, names: readonly string[]): string[] {
  const lines: string[] = [];
  let line = lead;
  names.forEach((name, i) => {
    const text = i < names.length - 1 ? `${name},` : name;
    if (line !== lead && line.length + 1 + text.length > LINE_WIDTH) {
      lines.push(line);
      line = ' '.repeat(lead.length);
    }
    line += line.endsWith(' ') ? text : ` ${text}`;
  });
  return [...lines, line];
}
