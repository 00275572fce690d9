import { describe, expect, it } from 'vitest';
import { byteRange } from './byte-range.js';

describe('byteRange', () => {
  it.each([
    ['bytes=0-0', 100, { start: 0, end: 0 }],
    ['bytes=10-19', 100, { start: 10, end: 19 }],
    ['bytes=90-', 100, { start: 90, end: 99 }],
    ['bytes=-10', 100, { start: 90, end: 99 }],
    ['bytes=-1000', 100, { start: 0, end: 99 }],
    ['bytes=50-1000', 100, { start: 50, end: 99 }],
    ['bytes=99-99', 100, { start: 99, end: 99 }],
    ['Bytes = 1 - 2', 100, { start: 1, end: 2 }],
  ])('%s of %d bytes is %o', (header, size, expected) => {
    expect(byteRange(header, size)).toEqual(expected);
  });

  it.each([
    [undefined, 100],
    ['', 100],
    ['bytes=100-', 100],
    ['bytes=100-200', 100],
    ['bytes=5-4', 100],
    ['bytes=-0', 100],
    ['bytes=-', 100],
    ['bytes=0-1,5-6', 100],
    ['items=0-1', 100],
    ['bytes=a-b', 100],
    ['bytes=0-', 0],
    ['bytes=-5', 0],
  ])('%s of %d bytes selects everything', (header, size) => {
    expect(byteRange(header, size)).toBeUndefined();
  });
});
