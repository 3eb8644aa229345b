/** A plain text table: a header row and aligned columns. */
export function table(headers: readonly string[], rows: readonly (readonly (string | number | undefined)[])[]): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === undefined ? '-' : String(c))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  const line = (r: readonly string[]): string => `  ${r.map((c, i) => c.padEnd(widths[i])).join('  ')}`.trimEnd();
  return [line(cells[0]), line(widths.map((w) => '─'.repeat(w))), ...cells.slice(1).map(line)].join('\n');
}
