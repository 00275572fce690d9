import { describe, expect, it } from 'vitest';
import { phonePath } from './phone-paths.js';

describe('phonePath', () => {
  it('keeps paths under the shared folders, normalized', () => {
    expect(phonePath('/sdcard')).toBe('/sdcard');
    expect(phonePath('/sdcard/Download/')).toBe('/sdcard/Download');
    expect(phonePath('/data/local/tmp/a/../b.txt')).toBe('/data/local/tmp/b.txt');
  });
  it('refuses a climb out, a relative path, and other folders', () => {
    for (const bad of ['/sdcard/../data/data', 'sdcard/x', '/data/data/com.x', '/sdcardx', '/']) {
      expect(() => phonePath(bad), bad).toThrow(/under \/sdcard and \/data\/local\/tmp only/);
    }
  });
});
