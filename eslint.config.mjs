// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

// core/index.ts is the one door into the engine (libs/lockwarden/src/core/README.md): outside
// core/, the library, the sample app and the benchmark import no file behind it.
const throughCoreIndex = {
  regex: String.raw`^(?:(?:\.{1,2}/)+(?:[^/]+/)*|lockwarden/)core/(?!index(?:\.ts)?$)`,
  message:
    'Import the engine through core/index.ts, its one door (libs/lockwarden/src/core/README.md); export what is missing from there.',
};
// The Nest layer's decorators and its interceptor share what lies at nest/'s root (the lock
// metadata, the retry hint), never each other's files.
/** @param {string} folder */
const apart = (folder) => ({
  regex: String.raw`^\.{1,2}/(?:.*/)?${folder}(?:/|$)`,
  message: `nest/decorators/ and nest/interceptors/ do not import each other: move what both need to nest/'s root.`,
});
// One rule entry per file: a later entry for the same files replaces an earlier one's patterns.
/** @param {...{ regex: string, message: string }} patterns */
const restrictImports = (...patterns) => ({
  'no-restricted-imports': ['error', { patterns: [throughCoreIndex, ...patterns] }],
});

export default tseslint.config(
  { ignores: ['**/dist/**', 'docs/api/**', 'node_modules/**', 'coverage/**', 'bench/results/**', '**/*.generated.ts'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        require: 'readonly',
        module: 'writable',
        __dirname: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  {
    files: ['libs/lockwarden/src/**/*.ts', 'apps/**/*.ts', 'bench/**/*.ts'],
    ignores: ['libs/lockwarden/src/core/**'],
    rules: restrictImports(),
  },
  {
    files: ['libs/lockwarden/src/nest/interceptors/**/*.ts'],
    rules: restrictImports(apart('decorators')),
  },
  {
    files: ['libs/lockwarden/src/nest/decorators/**/*.ts'],
    rules: restrictImports(apart('interceptors')),
  },
  {
    files: ['**/*.cjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['test/**/*.ts', '**/*.spec.ts'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
  },
);
