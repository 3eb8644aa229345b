// The order test files start in. Most of the suite's time is a few long files that wait on
// real processes, clocks and the npm registry; started last, one of them alone decides when
// the run ends. Jest puts a file first once its cache says it was slow, but a fresh clone has
// no cache (and it would put a file that failed last time first), so the known long files
// start first here, longest first, and Jest's own order follows for the rest.
'use strict';
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

/**
 * The files that take 15 s or more on a 2-core machine, by what they spend it on. Those that
 * compute (history workers, tick instances, apps) saturate both cores; those that wait (fault
 * proxies, failovers, leases running out) leave them idle. Run all the waiting ones together
 * and the machine idles for a minute: they start interleaved, longest first within each.
 */
const COMPUTING = [
  'test/tooling/packaging.spec.ts',
  'test/schedule/scheduled-ticks-faults.spec.ts',
  'test/faults/history-cluster.spec.ts',
  'test/faults/invariant.spec.ts',
  'test/schedule/scheduled-ticks.spec.ts',
  'test/faults/history.spec.ts',
  'test/tooling/lottery.spec.ts',
  'test/tooling/demo-interrupt.spec.ts',
  'test/tooling/acquire-path.spec.ts',
  'test/tooling/lottery-leader.spec.ts',
  'test/nest/dashboard.spec.ts',
];
const WAITING = [
  'test/topologies/sentinel.spec.ts',
  'test/topologies/quorum.spec.ts',
  'test/faults/faults.spec.ts',
  'test/topologies/glide.spec.ts',
  'test/topologies/cluster.spec.ts',
  'test/faults/fail-fast.spec.ts',
  'test/mutex/watchdog.spec.ts',
  'test/topologies/behaviour-redis.spec.ts',
  'test/topologies/behaviour-cluster.spec.ts',
  'test/topologies/behaviour-memory.spec.ts',
  'test/faults/faults-cluster.spec.ts',
  'test/leader/leadership.spec.ts',
  'test/topologies/slow-subscriber.spec.ts',
  'test/semaphore/semaphore.spec.ts',
];
const LONG = Array.from({ length: Math.max(COMPUTING.length, WAITING.length) }, (_, i) =>
  [COMPUTING[i], WAITING[i]].filter((file) => file !== undefined),
).flat();

const root = path.join(__dirname, '..', '..');
const rank = new Map(LONG.map((file, i) => [path.join(root, file), i]));

class LongFirstSequencer extends Sequencer {
  async sort(tests) {
    const ordered = await super.sort(tests);
    const known = (t) => rank.get(t.path) ?? LONG.length;
    // Array.prototype.sort is stable: the rest keep Jest's order.
    return [...ordered].sort((a, b) => known(a) - known(b));
  }
}

module.exports = LongFirstSequencer;
