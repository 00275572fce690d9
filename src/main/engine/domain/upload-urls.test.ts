import { describe, expect, it } from 'vitest';
import { checkUpload, signUpload } from './upload-urls.js';

const key = Buffer.from('0123456789abcdef0123456789abcdef');
const grant = { fileId: '6f1b3c9e-8a4d-4b1e-9f00-1a2b3c4d5e6f', expires: 2_000, nonce: 'n1' };

describe('upload URL signatures', () => {
  it('accepts its own signature before the expiry', () => {
    expect(checkUpload(key, grant, signUpload(key, grant), 1_999)).toBeUndefined();
  });

  it('refuses it from the expiry on', () => {
    expect(checkUpload(key, grant, signUpload(key, grant), 2_000)).toBe('upload_url_expired');
  });

  it('refuses any changed field, another key, and a truncated signature', () => {
    const signature = signUpload(key, grant);
    expect(checkUpload(key, { ...grant, expires: 9_000 }, signature, 1)).toBe('upload_url_invalid');
    expect(checkUpload(key, { ...grant, nonce: 'n2' }, signature, 1)).toBe('upload_url_invalid');
    expect(checkUpload(key, { ...grant, fileId: grant.fileId.replace('6f', '7f') }, signature, 1)).toBe('upload_url_invalid');
    expect(checkUpload(Buffer.from('another key, another lab........'), grant, signature, 1)).toBe('upload_url_invalid');
    expect(checkUpload(key, grant, signature.slice(0, -1), 1)).toBe('upload_url_invalid');
  });
});
