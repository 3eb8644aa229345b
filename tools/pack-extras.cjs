// Copies into the package what it ships from the repository (licence, changelog, the
// benchmarks, the docs pages and their images) before `npm pack`, and removes the copies after it.
// Usage, from libs/lockwarden: node ../../tools/pack-extras.cjs copy|clean
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const pkg = path.join(root, 'libs', 'lockwarden');
const files = {
  LICENSE: 'LICENSE',
  'CHANGELOG.md': 'CHANGELOG.md',
  'GUARANTEES.md': path.join('docs', 'GUARANTEES.md'),
  // The docs link to it (../BENCHMARKS.md): shipped, so those links hold in the package too.
  'BENCHMARKS.md': 'BENCHMARKS.md',
};

if (process.argv[2] === 'copy') {
  for (const [to, from] of Object.entries(files)) fs.copyFileSync(path.join(root, from), path.join(pkg, to));
  fs.cpSync(path.join(root, 'docs'), path.join(pkg, 'docs'), { recursive: true });
} else if (process.argv[2] === 'clean') {
  for (const to of Object.keys(files)) fs.rmSync(path.join(pkg, to), { force: true });
  fs.rmSync(path.join(pkg, 'docs'), { recursive: true, force: true });
} else {
  console.error('usage: pack-extras.cjs copy|clean');
  process.exitCode = 2;
}
