import { describe, expect, it } from 'vitest';
import { jsonTooDeep } from './json-depth.js';

const nest = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;

describe('jsonTooDeep', () => {
  it('counts objects and arrays alike, up to the limit inclusive', () => {
    expect(jsonTooDeep(nest(3), 3)).toBe(false);
    expect(jsonTooDeep(nest(4), 3)).toBe(true);
    expect(jsonTooDeep('{"a":{"b":[{}]}}', 3)).toBe(true);
    expect(jsonTooDeep('{"a":{"b":[1]}}', 3)).toBe(false);
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(jsonTooDeep(`{"a":"${'['.repeat(100)}"}`, 3)).toBe(false);
    expect(jsonTooDeep(`{"a":"\\"${'{'.repeat(100)}"}`, 3)).toBe(false);
    expect(jsonTooDeep(`{"a":"\\\\",${'['.repeat(10)}`, 3)).toBe(true);
  });

  it('is linear: 1 MiB of nesting is judged in milliseconds', () => {
    const text = nest(512 * 1024);
    const started = performance.now();
    expect(jsonTooDeep(text)).toBe(true);
    expect(jsonTooDeep(`"${'x'.repeat(1024 * 1024)}"`)).toBe(false);
    // Milliseconds alone (a quadratic scan would take many minutes); room for a loaded machine's pauses.
    expect(performance.now() - started).toBeLessThan(1000);
  });
});
