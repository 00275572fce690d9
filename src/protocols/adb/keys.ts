import { createHash, createPublicKey, publicDecrypt, constants, timingSafeEqual, type KeyObject } from 'node:crypto';

/**
 * adb's RSA public keys (`~/.android/adbkey.pub`): base64 of Android's `RSAPublicKey` struct, then a space and
 * `user@host`. The struct is little-endian: the modulus size in 32-bit words, n0inv, the modulus, R^2 mod n, and
 * the public exponent (AOSP libcrypto_utils android_pubkey.cpp).
 */

/** adb's keys are 2048-bit: 64 words. */
const MODULUS_WORDS = 64;
const MODULUS_BYTES = MODULUS_WORDS * 4;
/** size + n0inv + modulus + rr + exponent */
const STRUCT_SIZE = 4 + 4 + MODULUS_BYTES + MODULUS_BYTES + 4;
/** The DER prefix of a PKCS#1 v1.5 SHA-1 DigestInfo: adb signs its 20-byte token as if it were a SHA-1 digest. */
const SHA1_DIGEST_INFO = Buffer.from('3021300906052b0e03021a05000414', 'hex');

export interface AdbPublicKey {
  key: KeyObject;
  /** The base64 blob alone: what identifies the key, whatever comment follows it. */
  blob: string;
  /** MD5 of the key, as Android's "Allow USB debugging?" dialog shows it: `8D:1E:...`. */
  fingerprint: string;
  /** The `user@host` after the key, if any. */
  comment: string;
}

export class NotAnAdbKey extends Error {}

/** Parses adbkey.pub's text; throws NotAnAdbKey for anything else (a PEM, an ssh-rsa line, garbage). */
export function parseAdbPublicKey(text: string): AdbPublicKey {
  const trimmed = text.replace(/\0+$/, '').trim();
  const [blob = '', ...rest] = trimmed.split(/\s+/);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(blob)) throw new NotAnAdbKey('An adb public key is one base64 word, then user@host.');
  const raw = Buffer.from(blob, 'base64');
  if (raw.length !== STRUCT_SIZE || raw.readUInt32LE(0) !== MODULUS_WORDS) {
    throw new NotAnAdbKey(`An adb public key holds a ${STRUCT_SIZE}-byte 2048-bit RSA key; this one is ${raw.length} bytes.`);
  }
  const modulus = Buffer.from(raw.subarray(8, 8 + MODULUS_BYTES)).reverse();
  const exponent = raw.readUInt32LE(8 + 2 * MODULUS_BYTES);
  if (modulus[0]! < 0x80 || exponent < 3 || exponent % 2 === 0) throw new NotAnAdbKey('That is not a usable RSA key.');
  const e = Buffer.alloc(4);
  e.writeUInt32BE(exponent);
  const key = createPublicKey({ key: { kty: 'RSA', n: modulus.toString('base64url'), e: e.subarray(e.findIndex((b) => b !== 0)).toString('base64url') }, format: 'jwk' });
  const md5 = createHash('md5').update(raw).digest('hex').toUpperCase();
  return { key, blob, fingerprint: md5.match(/../g)!.join(':'), comment: rest.join(' ') };
}

/** Whether `signature` is the key's signature over adbd's token (RSA PKCS#1 v1.5, the token as a SHA-1 digest). */
export function verifyAdbSignature(key: KeyObject, token: Buffer, signature: Buffer): boolean {
  if (signature.length !== MODULUS_BYTES) return false;
  let decoded: Buffer;
  try {
    decoded = publicDecrypt({ key, padding: constants.RSA_PKCS1_PADDING }, signature);
  } catch {
    return false;
  }
  const expected = Buffer.concat([SHA1_DIGEST_INFO, token]);
  return decoded.length === expected.length && timingSafeEqual(decoded, expected);
}
