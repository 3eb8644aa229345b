#!/usr/bin/env node
// `npx lockwarden`: the installed package runs its build. In a clone of the repository, where
// nothing is built yet, it runs the TypeScript source through ts-node (a dev dependency there),
// so the CLI the README documents works right after `npm install`.
'use strict';
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const built = join(__dirname, '..', 'dist', 'cli', 'bin.js');
if (existsSync(built)) {
  require(built);
} else {
  require('ts-node').register({ transpileOnly: true, compilerOptions: { module: 'commonjs' } });
  require(join(__dirname, '..', 'src', 'cli', 'bin.ts'));
}
