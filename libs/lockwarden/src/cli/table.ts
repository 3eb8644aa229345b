import type { LockInfo, SemaphoreInfo } from '../core';

/** A plain-text table of locks for people; columns sized to their content. */
export function renderTable(infos: readonly LockInfo[]): string {
  if (infos.length === 0) return 'No locks found.\n';
  const rows = [
    ['LOCK', 'KIND', 'HOLDERS', 'LEASE-LEFT', 'FENCE', 'WAITERS'],
    ...infos.map((i) => [
      i.key,
      i.kind ?? 'free',
      i.holders.map((h) => h.instanceId).join(', ') || '-',
      i.held ? formatMs(i.leaseLeftMs) : '-',
      i.fencingToken === null ? '-' : String(i.fencingToken),
      String(i.waiters),
    ]),
  ];
  return columns(rows);
}

/** A semaphore's use of its limit, then one line per holder. */
export function renderSemaphore(info: SemaphoreInfo): string {
  const limit = info.limit === null ? 'no limit stored yet' : `${info.used} of ${info.limit} permits in use`;
  const head = `Semaphore ${info.key}: ${limit}, last fencing token ${info.fencingToken}\n`;
  if (info.holders.length === 0) return `${head}No permits held.\n`;
  const rows = [
    ['HOLDER', 'PERMITS', 'LEASE-LEFT'],
    ...info.holders.map((h) => [h.instanceId, String(h.permits), formatMs(h.leaseLeftMs)]),
  ];
  return head + columns(rows);
}

function columns(rows: readonly string[][]): string {
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
