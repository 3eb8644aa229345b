// The printout of `npm run acquire-path` as docs/how-it-works.md shows it: one fenced block
// after a marker line, which `npm run acquire-path -- --write-docs` rewrites.

/** The doc that shows the printout, from the repository's root. */
export const DOC_FILE = 'docs/how-it-works.md';

const MARKER = '<!-- acquire-path: `npm run acquire-path -- --write-docs` rewrites the block below. -->';
const FENCE = '```';

/** Where the block's text starts and ends in `markdown`, or undefined when it has none. */
function locate(markdown: string): { start: number; end: number } | undefined {
  const at = markdown.indexOf(MARKER);
  if (at === -1) return undefined;
  const open = markdown.indexOf(`${FENCE}text\n`, at + MARKER.length);
  if (open === -1) return undefined;
  const start = open + `${FENCE}text\n`.length;
  const end = markdown.indexOf(`\n${FENCE}`, start - 1);
  return end === -1 ? undefined : { start, end: end + 1 };
}

/** The printout the doc shows, or undefined when it shows none. */
export function docBlock(markdown: string): string | undefined {
  const at = locate(markdown);
  return at && markdown.slice(at.start, at.end);
}

/** `markdown` showing `printout` in its block; a doc without the marker and block is refused. */
export function withDocBlock(markdown: string, printout: string): string {
  const at = locate(markdown);
  if (!at) throw new Error(`The doc has no block to rewrite: a line ${MARKER} followed by a ${FENCE}text block.`);
  const text = printout.endsWith('\n') ? printout : `${printout}\n`;
  return markdown.slice(0, at.start) + text + markdown.slice(at.end);
}
