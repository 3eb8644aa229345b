import { checkHistory, CLOCK_STEP_US, type Section } from '../harness/history';

/** The checker must catch what it is there to catch, or the history tests prove nothing. */
const s = (token: number, entry: number, exit: number, aborted = false, key = 'k'): Section => ({
  key,
  token,
  entry,
  exit,
  aborted,
});

describe('the history checker', () => {
  it('accepts back-to-back sections with rising tokens', () => {
    expect(checkHistory([s(2, 10, 20), s(1, 0, 10), s(3, 20, 30), s(1, 5, 50, false, 'other')])).toEqual([]);
  });

  it('reports two live holders at once', () => {
    expect(checkHistory([s(1, 0, 10), s(2, 5, 15)])).toHaveLength(1);
    // A long section swallowing several later ones is caught for each of them.
    expect(checkHistory([s(1, 0, 100), s(2, 10, 20), s(3, 30, 40)])).toHaveLength(2);
  });

  it('lets a holder that was told of its loss overlap, but not two live ones', () => {
    expect(checkHistory([s(1, 0, 10, true), s(2, 5, 15)])).toEqual([]);
    expect(checkHistory([s(1, 0, 10), s(2, 5, 15, true), s(3, 8, 20)])).toHaveLength(1);
  });

  it("reports a section that ends before it begins, past the clock's step back", () => {
    expect(checkHistory([s(1, 1_000_000, 1_000_000 - 105)])).toEqual([]);
    expect(checkHistory([s(1, 1_000_000, 1_000_000 - CLOCK_STEP_US - 1)])).toHaveLength(1);
  });

  it('reports tokens that do not rise in entry order', () => {
    expect(checkHistory([s(2, 0, 10), s(1, 10, 20)])).toHaveLength(1);
    expect(checkHistory([s(1, 0, 10), s(1, 10, 20)])).toHaveLength(1);
  });
});
