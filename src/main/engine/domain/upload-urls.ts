import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signed upload URLs for stored files. The query carries the expiry and a nonce; the signature is an HMAC over the
 * file id, the expiry and the nonce, so none of them can be changed. The nonce is also stored on the file, and the
 * first PUT spends it: that is what makes a URL single-use.
 */

export interface UploadGrant {
  fileId: string;
  expires: number;
  nonce: string;
}

export type UploadRefusal = 'upload_url_invalid' | 'upload_url_expired';

const payload = (g: UploadGrant) => `benchtop-file-upload\n${g.fileId}\n${g.expires}\n${g.nonce}`;

export function signUpload(key: Uint8Array, grant: UploadGrant): string {
  return createHmac('sha256', key).update(payload(grant)).digest('base64url');
}

/** Checks the signature first (in constant time), then the expiry: an altered URL never learns whether it expired. */
export function checkUpload(key: Uint8Array, grant: UploadGrant, signature: string, now: number): UploadRefusal | undefined {
  const expected = Buffer.from(signUpload(key, grant));
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'upload_url_invalid';
  if (now >= grant.expires) return 'upload_url_expired';
  return undefined;
}
