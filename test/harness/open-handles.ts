/**
 * Resources (sockets, timers, ...) alive now that were not alive at `baseline`
 * (`process.getActiveResourcesInfo()` taken before): what a shutdown left behind.
 */
export function openHandlesBeyond(baseline: string[]): string[] {
  const left = [...baseline];
  const extra: string[] = [];
  for (const r of process.getActiveResourcesInfo()) {
    const i = left.indexOf(r);
    if (i >= 0) left.splice(i, 1);
    else extra.push(r);
  }
  return extra;
}
