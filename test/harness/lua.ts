import { LUA_SOURCES, type LuaScriptName } from '../../libs/lockwarden/src/core/redis/lua-sources.generated';

/** A Lua script's text as it ships: the .lua file with its `-- #include` lines filled in (npm run gen). */
export const lua = (name: LuaScriptName): string => LUA_SOURCES[name];
