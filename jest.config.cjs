// Nest 12 ships ES modules only, so Jest runs in ESM mode (see the "test" script).
/** @type {import('jest').Config} */
module.exports = {
  rootDir: __dirname,
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  testMatch: ['<rootDir>/libs/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts', '<rootDir>/apps/**/*.spec.ts'],
  moduleNameMapper: {
    '^lockwarden$': '<rootDir>/libs/lockwarden/src/index.ts',
    '^lockwarden/(.*)$': '<rootDir>/libs/lockwarden/src/$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.spec.json' }],
  },
  globalSetup: '<rootDir>/test/harness/global-setup.cjs',
  globalTeardown: '<rootDir>/test/harness/global-teardown.cjs',
  setupFilesAfterEnv: ['<rootDir>/test/harness/no-unhandled.ts'],
  testTimeout: 60000,
  // Most files wait on real processes, leases and clocks rather than compute: six workers
  // overlap those waits on a 2-core machine (measured: 134 s against 185 s with four).
  maxWorkers: 6,
  testSequencer: '<rootDir>/test/harness/sequencer.cjs',
};
