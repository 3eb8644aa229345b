import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { LUA_SOURCES } from './lua-sources.generated';

// The .lua files are the source of truth; the embedded copies must match them.
describe('embedded Lua scripts', () => {
  const dir = resolve('libs/lockwarden/src/core/scripts');
  const files = readdirSync(dir).filter((f) => f.endsWith('.lua'));

  it.each(files)('%s is embedded unchanged (run `npm run gen` after editing)', (file) => {
    const name = file.replace(/\.lua$/, '') as keyof typeof LUA_SOURCES;
    expect(LUA_SOURCES[name]).toBe(readFileSync(resolve(dir, file), 'utf8'));
  });

  it('embeds no script that has no .lua file', () => {
    expect(Object.keys(LUA_SOURCES).sort()).toEqual(files.map((f) => f.replace(/\.lua$/, '')).sort());
  });
});
