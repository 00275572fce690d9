import { describe, expect, it } from 'vitest';
import { documentsPath, phonePath } from './phone-paths.js';

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

describe('documentsPath', () => {
  it('keeps paths under an app\'s /Documents, normalized', () => {
    expect(documentsPath('/Documents')).toBe('/Documents');
    expect(documentsPath('/Documents/Inbox/')).toBe('/Documents/Inbox');
    expect(documentsPath('/Documents/a/../b.txt')).toBe('/Documents/b.txt');
  });
  it('refuses a climb to the container\'s Library or out of it, a relative path, and the root', () => {
    for (const bad of ['/Documents/../Library/Preferences', '/Documents/../../../etc', 'Documents/x', '/Library', '/Documentsx', '/', '/Documents/\0x']) {
      expect(() => documentsPath(bad), bad).toThrow(/under \/Documents only/);
    }
  });
});
