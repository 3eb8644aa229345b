// The corridor a newcomer walks (docs/how-it-works.md): `npm run acquire-path` prints the files
// one decorated call runs, those a reader opens to follow it, its release, the contended path,
// a renewal and the bounces. The doc shows that printout as it is now. The checks below find a
// file by what runs in it (a class, a function), since files move, and hold the corridor to no
// number: a number in a test shapes the code to fit it.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { docBlock, DOC_FILE } from '../../tools/acquire-path/doc-block';
import type { FileLine, Printout } from '../../tools/acquire-path/printout';
import { ChildScript, TS_ARGS } from '../harness/child';
import { redisForFile } from '../harness/redis';

const server = redisForFile();

let printed: Printout & { readonly text: string };

beforeAll(async () => {
  const tool = new ChildScript(
    spawn(process.execPath, [...TS_ARGS, resolve('tools/acquire-path.ts'), '--json'], {
      env: { ...process.env, TS_NODE_PROJECT: resolve('tsconfig.json'), REDIS_URL: server.redis.url },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  await tool.succeeded();
  printed = JSON.parse(tool.lines.join('\n')) as typeof printed;
}, 120_000);

/** The names of what ran in the file where `name` ran, in `lines`. */
function besides(lines: readonly FileLine[], name: string): readonly string[] | undefined {
  return lines.find((l) => l.names.includes(name))?.names;
}

const names = (lines: readonly FileLine[]): string[] => lines.flatMap((l) => l.names);

it('is what docs/how-it-works.md shows', () => {
  const shown = docBlock(readFileSync(resolve(DOC_FILE), 'utf8'));
  const now = `${printed.text}\n`;
  if (shown === now) return;
  const [was, is] = [(shown ?? '').split('\n'), now.split('\n')];
  throw new Error(
    `${DOC_FILE} does not show what npm run acquire-path prints now (a file moved, or the call runs other ` +
      'code). Run `npm run acquire-path -- --write-docs` and read what changed:\n' +
      [
        ...was.filter((l) => !is.includes(l)).map((l) => `- ${l}`),
        ...is.filter((l) => !was.includes(l)).map((l) => `+ ${l}`),
      ].join('\n'),
  );
});

it('has no bounce on the way in or out', () => {
  expect(printed.bounces).toEqual([]);
});

it('reads no options on a warm call, and the mutex store part picks the command', () => {
  expect(printed.runs.filter((l) => l.file.startsWith('core/options/'))).toEqual([]);
  expect(names(printed.runs)).toContain('RedisMutexStore.acquire');
});

it('releases straight into the held releases: no store frame passes the call on', () => {
  expect(names(printed.release).filter((n) => n.endsWith('.releaseHeld'))).toEqual([]);
  expect(names(printed.release)).toContain('HeldReleases.release');
});

it('runs no OpenTelemetry code without it: the same files, and only the event hub of the telemetry file', () => {
  const files = (lines: readonly FileLine[]): string[] => lines.map((l) => l.file).sort();
  expect(files(printed.withoutOtel)).toEqual(files(printed.runs));
  expect(besides(printed.runs, 'EventHub.emit')).not.toEqual(['EventHub.emit']);
  expect(besides(printed.withoutOtel, 'EventHub.emit')).toEqual(['EventHub.emit']);
});
