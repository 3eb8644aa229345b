import { LockConfigError } from '../../errors';
import { compileKeySpec } from './key-template';

const throwingToString = {
  toString(): string {
    throw new Error('toString must never be called');
  },
};

function thrown(call: () => unknown): unknown {
  try {
    call();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('key templates', () => {
  const where = 'Shop.order()';

  it('keeps literal text and fills indexes and nested paths', () => {
    const resolve = compileKeySpec('order:{0}:{1.user.org.id}:v2', where, 2);
    expect(resolve(undefined, ['42', { user: { org: { id: 7 } } }])).toEqual(['order:42:7:v2']);
  });

  it('returns fixed keys without looking at arguments', () => {
    expect(compileKeySpec('daily-draw', where, 0)(undefined, [])).toEqual(['daily-draw']);
  });

  it('de-duplicates and sorts several keys', () => {
    const resolve = compileKeySpec(['stock:{1}', 'stock:{0}', 'stock:{0}'], where, 2);
    expect(resolve(undefined, ['b', 'a'])).toEqual(['stock:a', 'stock:b']);
  });

  it('calls key functions with the instance as this', () => {
    const resolve = compileKeySpec(
      function (this: { region: string }, id: string) {
        return [`${this.region}:${id}`, `${this.region}:all`];
      },
      where,
      1,
    );
    expect(resolve({ region: 'eu' }, ['9'])).toEqual(['eu:9', 'eu:all']);
  });

  it.each([
    [undefined, /resolved to undefined/],
    [null, /resolved to null/],
    [{}, /resolved to object/],
    ['', /resolved to ""/],
  ])('rejects a placeholder that resolves to %p, naming method and placeholder', (value, message) => {
    const resolve = compileKeySpec('order:{0.id}', where, 1);
    const call = (): string[] => resolve(undefined, [{ id: value }]);
    expect(call).toThrow(LockConfigError);
    expect(call).toThrow(/Shop\.order\(\): placeholder "\{0\.id\}"/);
    expect(call).toThrow(message);
  });

  it.each([
    ['', 0, /non-empty string or a key function/],
    [[], 0, /list of lock keys is empty/],
    ['order:{2}', 2, /refers to argument 2, but the method declares 2 parameter/],
    ['order:{id}', 1, /must be an argument index[\s\S]*key function: it gets the method's arguments in order/],
    ['order:{0..x}', 1, /must be an argument index/],
    [42, 0, /non-empty string or a key function, got 42/],
    ['job:{0', 1, /key "job:\{0" has an unmatched "\{" at position 4/],
    ['job:}', 0, /key "job:\}" has an unmatched "\}" at position 4/],
    ['job:{0}}', 1, /unmatched "\}" at position 7/],
    ['{{0}}', 1, /unmatched "\{" at position 0/],
    ['job:{0}:{1', 2, /unmatched "\{" at position 8/],
    ['job:{}', 0, /empty placeholder \{\}/],
    [['ok:{0}', 'bad:{'], 1, /key "bad:\{" has an unmatched/],
  ])('rejects the spec %p when the decorator is applied', (spec, params, message) => {
    expect(() => compileKeySpec(spec, where, params as number)).toThrow(LockConfigError);
    expect(() => compileKeySpec(spec, where, params as number)).toThrow(message);
  });

  it('quotes at most 200 characters of a huge template in its message', () => {
    const err = thrown(() => compileKeySpec(`${'t'.repeat(2 ** 20)}{`, where, 0));
    expect(err).toBeInstanceOf(LockConfigError);
    expect((err as Error).message).toMatch(/…" \(1048577 characters\) has an unmatched "\{"/);
    expect((err as Error).message.length).toBeLessThan(500);
  });

  it.each([
    ['a lone surrogate', 'a\uD800', /lone UTF-16 surrogate/],
    ['a null-prototype object', Object.create(null), /resolved to object/],
    ['an object whose toString throws', throwingToString, /resolved to object/],
    ['a 1 MiB string', 'k'.repeat(2 ** 20), /limit is 1024/],
  ])('rejects an argument that is %s with LockConfigError, never running it', (_name, value, message) => {
    const resolve = compileKeySpec('job:{0}', where, 1);
    expect(() => resolve(undefined, [value])).toThrow(LockConfigError);
    expect(() => resolve(undefined, [value])).toThrow(message);
  });

  it('rejects what a key function returns when it is no key', () => {
    const resolve = compileKeySpec(() => [] as string[], where, 0);
    expect(() => resolve(undefined, [])).toThrow(/must return a key or a non-empty array/);
    expect(() => compileKeySpec(() => 'x'.repeat(2000), where, 0)(undefined, [])).toThrow(/limit is 1024/);
  });
});
