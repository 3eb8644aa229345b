#!/usr/bin/env node
// `npx lockwarden`: inspect and administer locks from a shell. See `lockwarden --help`.
import { EXIT, runCli } from './main';

runCli(process.argv.slice(2), process.env, {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
}).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = EXIT.internal;
  },
);
