import { describe, expect, it } from 'vitest';
import { VersionedCache } from './cache.js';

describe('VersionedCache', () => {
  it('loads once per version, reloads after a write, and never remembers a miss', () => {
    let version = 0;
    let loads = 0;
    const rows = new Map([['a', 1]]);
    const cache = new VersionedCache(() => version);
    const read = (key: string) => cache.memo(key, () => (loads++, rows.get(key)));

    expect(read('a')).toBe(1);
    expect(read('a')).toBe(1);
    expect(loads).toBe(1);

    rows.set('a', 2);
    version++;
    expect(read('a')).toBe(2);
    expect(loads).toBe(2);

    expect(read('b')).toBeUndefined();
    rows.set('b', 3); // created without a versioned write, like a new session
    expect(read('b')).toBe(3);
  });

  it('starts over when full, so memory stays bounded', () => {
    let loads = 0;
    const cache = new VersionedCache(() => 0, 2);
    for (const key of ['a', 'b', 'c', 'a']) cache.memo(key, () => (loads++, key));
    expect(loads).toBe(4);
  });
});
