import calculateSlot from 'cluster-key-slot';

/**
 * Groups keys by Cluster hash slot. Redis refuses a script whose declared keys
 * span slots (CROSSSLOT), even on one node, so a batched operation makes one
 * call per slot; the Cluster client routes each, and follows MOVED and ASK.
 */
export function groupBySlot<T>(items: readonly T[], keyOf: (item: T) => string): T[][] {
  const groups = new Map<number, T[]>();
  for (const item of items) {
    const slot = calculateSlot(keyOf(item));
    const group = groups.get(slot);
    if (group) group.push(item);
    else groups.set(slot, [item]);
  }
  return [...groups.values()];
}
