import { describe, expect, it } from 'vitest';
import { iso, isoOrNull, uniqueCreatedAt } from './time.js';

describe('uniqueCreatedAt', () => {
  it.each([
    [1000, null, 1000],
    [1000, undefined, 1000],
    [1000, 999, 1000],
    [1000, 1000, 1001],
    [1000, 1005, 1006],
  ])('now %d after newest %s is %d', (now, newest, expected) => {
    expect(uniqueCreatedAt(now, newest)).toBe(expected);
  });
});

describe('iso', () => {
  it('is RFC 3339 UTC with milliseconds', () => {
    expect(iso(Date.UTC(2026, 10, 21, 1, 2, 3, 4))).toBe('2026-11-21T01:02:03.004Z');
    expect(isoOrNull(null)).toBeNull();
    expect(isoOrNull(0)).toBe('1970-01-01T00:00:00.000Z');
  });
});
