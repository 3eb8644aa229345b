#!/usr/bin/env node
// Builds the published package twice: CommonJS in dist/ for `require` (Nest 11 apps), and ES
// modules in dist/esm/ for `import` (Nest 12 apps, and their Jest, which cannot require an
// ES-module Nest from CommonJS on Node 20). Node's ESM loader wants full relative
// specifiers, so the ES build's imports get their `.js` / `/index.js` written out here,
// in the declarations too, which node16/nodenext type resolution reads the same way.
'use strict';
const { execFileSync } = require('node:child_process');
const { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } = require('node:fs');
const { dirname, join, resolve } = require('node:path');

const lib = resolve(__dirname, '..', 'libs', 'lockwarden');
const tsc = require.resolve('typescript/bin/tsc');

rmSync(join(lib, 'dist'), { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', join(lib, 'tsconfig.lib.json')], { stdio: 'inherit' });
// The same sources again, so the CommonJS build's type check stands for both: emitting without
// it gives the same files for half the time.
execFileSync(process.execPath, [tsc, '-p', join(lib, 'tsconfig.esm.json'), '--noCheck'], { stdio: 'inherit' });

const esm = join(lib, 'dist', 'esm');
writeFileSync(join(esm, 'package.json'), JSON.stringify({ type: 'module' }, null, 2) + '\n');

// The ES build's `require` for dependencies loaded only when used (see core/own-require.ts):
// one resolving from the package itself, which only an ES module can name (import.meta.url).
writeFileSync(
  join(esm, 'core', 'own-require.js'),
  [
    "import { createRequire } from 'node:module';",
    'const own = createRequire(import.meta.url);',
    '/** `require` resolving from this package (see the source, core/own-require.ts). */',
    'export function ownRequire() {',
    '  return own;',
    '}',
    '',
  ].join('\n'),
);

/** `./x` becomes `./x.js` or `./x/index.js`, whichever the build holds. */
function fullSpecifier(file, spec) {
  if (!spec.startsWith('.') || /\.(c|m)?js$/.test(spec)) return spec;
  const target = resolve(dirname(file), spec);
  if (existsSync(`${target}.js`)) return `${spec}.js`;
  if (existsSync(join(target, 'index.js'))) return `${spec}/index.js`;
  throw new Error(`${file}: cannot resolve ${spec} in the ES build`);
}

// Static imports and re-exports (`from '...'`), bare side-effect imports and `import('...')`.
const SPECIFIER = /(\bfrom\s*|\bimport\s*|\bimport\s*\(\s*)(['"])(\.{1,2}\/[^'"]*|\.{1,2})\2/g;

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name.endsWith('.js') || name.endsWith('.d.ts')) {
      const source = readFileSync(path, 'utf8');
      const fixed = source.replace(
        SPECIFIER,
        (_all, lead, quote, spec) => `${lead}${quote}${fullSpecifier(path, spec)}${quote}`,
      );
      if (fixed !== source) writeFileSync(path, fixed);
    }
  }
}
walk(esm);
