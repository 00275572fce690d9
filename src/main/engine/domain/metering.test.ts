import { describe, expect, it } from 'vitest';
import { periodContaining, secondsUsed } from './metering.js';

const at = (s: string) => Date.parse(s);

describe('periodContaining', () => {
  it.each([
    ['2026-11-21T12:00:00.000Z', '2026-11-01T00:00:00.000Z', '2026-12-01T00:00:00.000Z'],
    ['2026-12-31T23:59:59.999Z', '2026-12-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z'],
    ['2028-02-29T00:00:00.000Z', '2028-02-01T00:00:00.000Z', '2028-03-01T00:00:00.000Z'],
    ['2026-03-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z', '2026-04-01T00:00:00.000Z'],
  ])('%s is in [%s, %s)', (now, start, end) => {
    expect(periodContaining(at(now))).toEqual({ start: at(start), end: at(end) });
  });
});

describe('secondsUsed', () => {
  const period = { start: at('2026-11-01T00:00:00Z'), end: at('2026-12-01T00:00:00Z') };
  const now = at('2026-11-21T12:00:00Z');

  it.each([
    ['a closed interval inside the period', [{ startedAt: now - 90_000, endedAt: now - 30_000 }], 60],
    ['a running interval, up to now', [{ startedAt: now - 45_500, endedAt: null }], 45],
    ['only the part after the period start', [{ startedAt: period.start - 10_000, endedAt: period.start + 5_000 }], 5],
    ['nothing before the period', [{ startedAt: period.start - 10_000, endedAt: period.start }], 0],
    ['nothing in the future', [{ startedAt: now + 1000, endedAt: null }], 0],
    ['a sum over intervals, rounded down once', [{ startedAt: 0 + now - 1500, endedAt: now - 1000 }, { startedAt: now - 700, endedAt: now - 100 }], 1],
    ['no intervals', [], 0],
  ])('%s', (_name, intervals, expected) => {
    expect(secondsUsed(intervals, period, now)).toBe(expected);
  });
});
