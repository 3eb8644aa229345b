// The legs of `npm run test:matrix`: spec files of npm test run again, each leg on another
// server or connection, plus the matrix's own specs (test/matrix/). run-tests.cjs runs each
// leg as one Jest run with the leg's environment; the harness (test/harness/redis.ts) reads it.
'use strict';
const { spawnSync } = require('node:child_process');

/** Jest's arguments for these spec files only (paths from the project root, as regular expressions). */
function only(files) {
  // The files first: Jest takes every bare argument after an array option (testPathIgnorePatterns)
  // as one more of its values, which would ignore these files and run every other one.
  return [...files.map((f) => f.replace(/\./g, '\\.')), '--testPathIgnorePatterns=/node_modules/'];
}

/**
 * Redis 8.6, which tools/redis8.sh builds: its path (from run-tests.cjs, which looked in that
 * script's cache, or at $REDIS8_SERVER) becomes the harness's plain Redis
 * (LOCKWARDEN_TEST_SERVER), so these files run unchanged on it, one server and 3-master
 * Clusters, through ioredis, node-redis and GLIDE; their Valkey rows are left to npm test.
 * test/matrix/redis8.spec.ts checks that the servers are 8.6, and adds what is Redis 8's own
 * (DELEX IFEQ).
 * @param {{ redis8Path: string }} here
 */
function redis8Leg(here) {
  const files = [
    'test/matrix/redis8.spec.ts',
    'test/topologies/behaviour-redis.spec.ts',
    'test/topologies/behaviour-cluster.spec.ts',
    // The behaviour suite through GLIDE, on one server and on a Cluster.
    'test/topologies/glide.spec.ts',
    'test/faults/history.spec.ts',
    'test/faults/history-cluster.spec.ts',
    'test/faults/faults.spec.ts',
    'test/faults/faults-cluster.spec.ts',
  ];
  return {
    name: 'Redis 8.6',
    what: 'behaviour, 10 000-section history and fault tests on Redis 8.6 (one server, 3-master Clusters)',
    available() {
      const version = here.redis8Path ? spawnSync(here.redis8Path, ['--version'], { encoding: 'utf8' }) : undefined;
      return version?.status === 0 && / v=8\.6\./.test(version.stdout)
        ? { ok: true }
        : { ok: false, why: 'not built here (tools/redis8.sh builds it; .ci/run runs that)' };
    },
    env: { LOCKWARDEN_TEST_SERVER: here.redis8Path, REDIS8_SERVER: here.redis8Path },
    // Not the history check's Redlock quorum: five independent masters, and scripts only (no
    // compare-and-delete there), which npm test's run covers; here it would only add time.
    args: [...only(files), '--testNamePattern=^(?!.*Redlock quorum)'],
  };
}

/**
 * TLS: the harness's servers listen for TLS alone, with a certificate signed by a throwaway CA
 * that the Jest global setup makes for the run (test/harness/tls-ca.cjs), and every client is
 * handed that CA in its own options (test/harness/tls.ts): the behaviour suite in npm test's
 * cells (test/harness/cells.ts: one server and a 3-master Cluster; ioredis from Lockwarden's
 * options, node-redis, GLIDE), one history
 * check (4 processes, ioredis), and test/matrix/tls.spec.ts (GLIDE, ACL users, the certificate
 * error, no console noise without INFO).
 */
function tlsLeg() {
  return {
    name: 'TLS',
    what: 'behaviour suite, a history check, ACL users and certificate errors over TLS (one server, a 3-master Cluster)',
    available: () => require('../test/harness/tls-ca.cjs').tlsAvailable(),
    // Valkey 9 as tools/valkey9.sh builds it has no TLS (BUILD_TLS=no): its rows of glide.spec.ts
    // are left out here, as npm test runs them in plain text.
    env: { LOCKWARDEN_TEST_TLS: '1', VALKEY9_SERVER: '' },
    args: [
      ...only([
        'test/matrix/tls.spec.ts',
        'test/topologies/behaviour-redis.spec.ts',
        'test/topologies/behaviour-cluster.spec.ts',
        'test/topologies/glide.spec.ts',
        'test/faults/history.spec.ts',
      ]),
      // Of the history checks, npm test's one on a single server (through node-redis); of
      // glide.spec.ts, the behaviour suite on one server and on a Cluster alone (its other tests,
      // the shard failover among them, are left to npm test to keep the leg short).
      '--testNamePattern=' +
        [
          '^(?!history |through a GLIDE |a GLIDE ).*',
          '^history check: .* on a single Redis, through a node-redis client$',
          '^through a GLIDE (cluster )?client, on .* lock behaviour on GLIDE on ',
        ].join('|'),
    ],
  };
}

/**
 * Every cell: the history, fault and behaviour checks in each server × client × topology cell
 * that npm test leaves out (it runs each behaviour once per topology and per client:
 * test/harness/cells.ts). LOCKWARDEN_TEST_CELLS=rest makes these files take only the cells
 * npm test does not, and skip their other checks, which npm test has run.
 */
function everyCellLeg() {
  return {
    name: 'every cell',
    what: 'history, fault and behaviour checks in the server × client × topology cells npm test leaves out',
    available: () => ({ ok: true }),
    env: { LOCKWARDEN_TEST_CELLS: 'rest' },
    args: only([
      'test/faults/history.spec.ts',
      'test/faults/history-cluster.spec.ts',
      'test/faults/faults.spec.ts',
      'test/faults/faults-cluster.spec.ts',
      'test/topologies/glide.spec.ts',
      'test/topologies/behaviour-cluster.spec.ts',
      'test/topologies/behaviour-valkey9.spec.ts',
      'test/matrix/behaviour-valkey.spec.ts',
    ]),
  };
}

/**
 * @param {{ root: string, valkey9Path: string, redis8Path: string }} here
 * @returns {{ name: string, what: string, available(): { ok: boolean, why?: string }, env: Record<string, string>, args: string[] }[]}
 */
function legs(here) {
  return [everyCellLeg(), redis8Leg(here), tlsLeg()];
}

module.exports = { legs, only };
