import { describe, expect, it } from 'vitest';
import { addedFiles } from './added-files.js';

describe('addedFiles', () => {
  it('names each added path whose folder was there before, not what is inside an added folder', () => {
    const before = ['/s/Music', '/s/Music/lab.ogg', '/s/Download'];
    const now = [...before, '/s/Download/a.pdf', '/s/Download/new', '/s/Download/new/deep', '/s/Download/new/deep/x.txt', '/s/Download/new-2'];
    expect(addedFiles(before, now)).toEqual(['/s/Download/a.pdf', '/s/Download/new', '/s/Download/new-2']);
  });

  it('names nothing when nothing was added, and nothing that was removed', () => {
    expect(addedFiles(['/s/a', '/s/b'], ['/s/a'])).toEqual([]);
  });

  it('takes an iPhone app\'s entries (bundle id, colon, path) the same way', () => {
    expect(addedFiles(['com.x:/Documents'], ['com.x:/Documents', 'com.x:/Documents/f', 'com.x:/Documents/f/g'])).toEqual(['com.x:/Documents/f']);
  });
});
