import { lockTimelineSvg } from './timeline';

const lock = (t: number, type: string, key: string, token: number) => ({ event: 'lock', t, type, key, token });

describe('the lock timeline', () => {
  const instances = [
    { id: 'lottery-1', killedAt: 1_900, events: [lock(1_000, 'acquired', 'lottery:crash-x', 41)] },
    {
      id: 'lottery-2',
      killedAt: undefined,
      events: [lock(3_500, 'acquired', 'lottery:crash-x', 42), lock(4_700, 'released', 'lottery:crash-x', 42)],
    },
  ];
  const svg = lockTimelineSvg(instances, { instance: 'lottery-1', at: 5_000, token: 41 });

  it('draws a time axis with ticks, so hold times can be read off it', () => {
    expect(svg).toContain('>0 ms<');
    expect(svg).toContain('>1 s<');
    expect(svg).toContain('>4 s<');
  });

  it('explains every mark in its legend: fencing tokens, the killed instance, the refused write', () => {
    expect(svg).toContain('crash-x #41');
    expect(svg).toContain('lottery-1 ✝');
    expect(svg).toMatch(/#n: the fencing token of that hold/);
    expect(svg).toMatch(/✝: the instance was SIGKILLed/);
    expect(svg).toMatch(/✘: a write the fence refused/);
  });

  it("draws the dead holder's late write that the fence refused, on its row", () => {
    expect(svg).toContain('late write #41 refused by the fence');
  });
});
