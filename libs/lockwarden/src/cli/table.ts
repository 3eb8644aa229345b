import type { LockInfo } from '../core/store/inspect';

/** A plain-text table of locks for people; columns sized to their content. */
export function renderTable(infos: readonly LockInfo[]): string {
  if (infos.length === 0) return 'No locks found.\n';
  const rows = [
    ['LOCK', 'MODE', 'HOLDERS', 'TTL', 'FENCE', 'WAITERS'],
    ...infos.map((i) => [
      i.key,
      i.mode ?? 'free',
      i.holders.map((h) => h.instanceId).join(', ') || '-',
      i.held ? formatMs(i.ttlMs) : '-',
      String(i.fencingToken),
      String(i.waiters),
    ]),
  ];
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return (
    rows
      .map((r) =>
        r
          .map((cell, c) => cell.padEnd(widths[c]))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

export function formatMs(ms: number): string {
  if (ms < 1_000) return `${ms}ms`;
  if (ms < 120_000) return `${(ms / 1_000).toFixed(1)}s`;
  return `${Math.round(ms / 60_000)}m`;
}
