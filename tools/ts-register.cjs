// `node -r ./tools/ts-register.cjs script.ts`: runs TypeScript the way ts-node's
// transpile-only mode does (CommonJS, the project's tsconfig, no type check),
// but keeps each transpiled file on disk, keyed by its path and text. ts-node transpiles the
// library afresh in every process: about 2 s of CPU each, and the test suite starts a
// hundred processes, the demo four. From the cache a worker starts in a fraction of that, and the first
// process to meet a changed file transpiles it again.
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..');
const project = process.env.TS_NODE_PROJECT ?? path.join(root, 'tsconfig.json');
// Every key starts with the compiler's version, the tsconfig and this file: change any of
// them and nothing transpiled before is used.
const salt = [
  require('typescript/package.json').version,
  fs.readFileSync(project, 'utf8'),
  fs.readFileSync(path.join(__dirname, 'ts-register.cjs'), 'utf8'),
];
const cacheDir = path.join(os.tmpdir(), 'lockwarden-ts-cache');
let ts;
let compilerOptions;

/** TypeScript itself is loaded only when a file is not in the cache. */
function compiler() {
  ts = require('typescript');
  const { config, error } = ts.readConfigFile(project, ts.sys.readFile);
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, path.dirname(project));
  compilerOptions = { ...options, sourceMap: false, inlineSourceMap: true, inlineSources: false, noEmit: false };
}

function transpile(source, filename) {
  const hash = crypto.createHash('sha256');
  for (const part of [...salt, filename, source]) hash.update(part).update('\0');
  const cached = path.join(cacheDir, `${hash.digest('hex')}.js`);
  try {
    return fs.readFileSync(cached, 'utf8');
  } catch {
    if (!ts) compiler();
    const code = ts.transpileModule(source, { fileName: filename, compilerOptions }).outputText;
    fs.mkdirSync(cacheDir, { recursive: true });
    // Written aside, then renamed: a process reading the same entry sees all of it or none.
    const partial = `${cached}.${process.pid}.tmp`;
    fs.writeFileSync(partial, code);
    fs.renameSync(partial, cached);
    return code;
  }
}

/** Transpiles one file into the cache (tools/ts-warm.cjs fills it before a test run). */
module.exports.transpileFile = (filename) => transpile(fs.readFileSync(filename, 'utf8'), filename);

// Stack traces point at the TypeScript lines (the output carries an inline source map).
process.setSourceMapsEnabled(true);

require.extensions['.ts'] = function compileTypeScript(module, filename) {
  if (filename.includes(`${path.sep}node_modules${path.sep}`)) {
    throw new Error(`${filename}: TypeScript inside node_modules is not loaded here`);
  }
  module._compile(transpile(fs.readFileSync(filename, 'utf8'), filename), filename);
};
