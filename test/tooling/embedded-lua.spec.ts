import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';

interface Target {
  scripts: string;
  module: string;
}

// The .lua files are the source of truth; the embedded copies must match them.
const embed = createRequire(join(process.cwd(), 'tools', 'x.cjs'))('./embed-lua.cjs') as {
  render(target: Target): string;
  TARGETS: Target[];
  root: string;
};

describe('embedded Lua scripts', () => {
  it.each(embed.TARGETS.map((t) => [t.module, t] as const))(
    '%s is up to date with the scripts beside their callers (run `npm run gen` after editing a script)',
    (module, target) => {
      expect(readFileSync(join(embed.root, module), 'utf8')).toBe(embed.render(target));
    },
  );
});
