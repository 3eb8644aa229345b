import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';

// The .lua files are the source of truth; the embedded copies must match them.
const embed = createRequire(join(process.cwd(), 'tools', 'x.cjs'))('./embed-lua.cjs') as {
  render(dir: string): string;
  DIRS: string[];
  root: string;
};

describe('embedded Lua scripts', () => {
  it.each(embed.DIRS)('%s/lua-sources.generated.ts is up to date (run `npm run gen` after editing a script)', (dir) => {
    const abs = join(embed.root, dir);
    expect(readFileSync(join(abs, 'lua-sources.generated.ts'), 'utf8')).toBe(embed.render(abs));
  });
});
