import { LockConfigError } from '../../errors';
import { checkKey, describe } from '../../core';
import { quoteKey } from '../../errors/key-text';

/**
 * Which lock(s) a decorated method takes: a template such as `'order:{0.id}'`
 * (argument 0's `id`), several templates, or a function of the call's
 * arguments with `this` bound to the instance.
 *
 * @example
 * ```ts
 * @Locked('order:{0.id}') confirm(order: Order) {}
 * @Locked(['stock:{0}', 'stock:{1}']) move(from: string, to: string) {}
 * @Locked(function (this: Shop, id: string) { return `${this.region}:${id}`; }) open(id: string) {}
 * ```
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a key function sees the method's own `this` and arguments, whatever they are
export type KeySpec = string | string[] | ((this: any, ...args: any[]) => string | string[]);

/** Resolves a method call's lock keys: de-duplicated and sorted, so every caller takes them in one order. */
export type KeyResolver = (self: unknown, args: readonly unknown[]) => string[];

interface Placeholder {
  readonly text: string;
  readonly index: number;
  readonly path: readonly string[];
}

type Part = string | Placeholder;

const PLACEHOLDER = /\{([^{}]*)\}/g;
const PLACEHOLDER_BODY = /^(\d+)((?:\.[A-Za-z_$][\w$]*|\.\d+)*)$/;

/**
 * Compiles a key spec once, when the decorator is applied. `where` names the
 * method in error messages; `paramCount` is how many parameters it declares.
 */
export function compileKeySpec(spec: unknown, where: string, paramCount: number): KeyResolver {
  if (typeof spec === 'function') {
    const fn = spec as (...args: unknown[]) => unknown;
    return (self, args) => finish(toKeys(fn.apply(self, args as unknown[]), where, 'its key function'), where);
  }
  const templates = Array.isArray(spec) ? spec : [spec];
  if (templates.length === 0) throw new LockConfigError(`${where}: the list of lock keys is empty.`);
  const compiled = templates.map((t) => compileTemplate(t, where, paramCount));
  if (compiled.every((parts) => parts.every((p) => typeof p === 'string'))) {
    const fixed = finish(
      compiled.map((parts) => parts.join('')),
      where,
    );
    return () => fixed;
  }
  return (_self, args) =>
    finish(
      compiled.map((parts) => render(parts, args, where)),
      where,
    );
}

function compileTemplate(template: unknown, where: string, paramCount: number): Part[] {
  if (typeof template !== 'string' || template.length === 0) {
    throw new LockConfigError(
      `${where}: a lock key must be a non-empty string or a key function, got ${describe(template)}.`,
    );
  }
  const parts: Part[] = [];
  let last = 0;
  const literal = (text: string, at: number): void => {
    // A stray brace is a placeholder typed wrong ('job:{0'): taken literally, every call would share one lock.
    const stray = text.search(/[{}]/);
    if (stray >= 0) {
      throw new LockConfigError(
        `${where}: key ${quoteKey(template)} has an unmatched "${text[stray]}" at position ${at + stray}. ` +
          'Placeholders look like {0} or {1.user.id}; for a key with a literal brace, use a key function.',
      );
    }
    if (text.length > 0) parts.push(text);
  };
  for (const m of template.matchAll(PLACEHOLDER)) {
    const shown = quoteKey(m[0], 40);
    if (m[1].length === 0) {
      throw new LockConfigError(
        `${where}: key ${quoteKey(template)} has an empty placeholder {}; name an argument, such as {0}.`,
      );
    }
    const body = PLACEHOLDER_BODY.exec(m[1]);
    if (!body) {
      throw new LockConfigError(
        `${where}: placeholder ${shown} in key ${quoteKey(template)} must be an argument index with an optional path, such as {0} or {1.user.id}. ` +
          "To name an argument or compute the key, use a key function: it gets the method's arguments in order, so for " +
          'confirm(order: Order), (order: Order) => `order:${order.id}`.',
      );
    }
    const index = Number(body[1]);
    if (index >= paramCount) {
      throw new LockConfigError(
        `${where}: placeholder ${shown} in key ${quoteKey(template)} refers to argument ${index}, but the method declares ${paramCount} parameter(s).`,
      );
    }
    literal(template.slice(last, m.index), last);
    parts.push({ text: m[0], index, path: body[2] ? body[2].slice(1).split('.') : [] });
    last = m.index + m[0].length;
  }
  literal(template.slice(last), last);
  return parts;
}

function render(parts: readonly Part[], args: readonly unknown[], where: string): string {
  let key = '';
  for (const part of parts) {
    if (typeof part === 'string') {
      key += part;
      continue;
    }
    let value: unknown = args[part.index];
    for (const step of part.path) {
      value = value === null || value === undefined ? undefined : (value as Record<string, unknown>)[step];
    }
    if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') {
      key += String(value);
    } else if (typeof value === 'string' && value.length > 0) {
      key += value;
    } else {
      throw new LockConfigError(
        `${where}: placeholder ${quoteKey(part.text, 40)} resolved to ${describe(value)}; it must be a non-empty string, a number, a bigint or a boolean (a key function can compute anything else). The method did not run.`,
      );
    }
  }
  return key;
}

function toKeys(value: unknown, where: string, source: string): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.length > 0) return value as string[];
  throw new LockConfigError(
    `${where}: ${source} must return a key or a non-empty array of keys, got ${describe(value)}.`,
  );
}

function finish(keys: string[], where: string): string[] {
  for (const key of keys) checkKey(key, `lock key of ${where}`);
  return keys.length === 1 ? keys : [...new Set(keys)].sort();
}
