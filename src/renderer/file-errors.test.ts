import { describe, expect, it } from 'vitest';
import { fileFailureSentence, isAppFile, notAnAppMessage } from './file-errors.js';

describe('what the page says about app files', () => {
  it('takes only .apk and .ipa, in any case', () => {
    expect(['a.apk', 'B.IPA', 'c.Apk'].map(isAppFile)).toEqual([true, true, true]);
    expect(['notes.txt', 'apk', 'x.apk.zip', 'x.aab'].map(isAppFile)).toEqual([false, false, false, false]);
    expect(notAnAppMessage('notes.txt')).toBe('notes.txt is not an app: choose an Android .apk or an iOS .ipa file.');
  });

  it('turns the API\'s failure codes into sentences without the archive reader\'s jargon', () => {
    const sentence = fileFailureSentence('not_an_app: End of central directory record signature not found');
    expect(sentence).not.toMatch(/not_an_app|central directory/);
    expect(sentence).toMatch(/^This file is not an app/);
    expect(fileFailureSentence('size_mismatch: 10 bytes, expected 12')).toMatch(/cut short/);
    expect(fileFailureSentence('sha256_mismatch: abc')).toMatch(/checksum/);
    expect(fileFailureSentence('something_else: the disk is full')).toBe('The disk is full.');
    expect(fileFailureSentence(undefined)).toBe('The file could not be processed.');
  });
});
