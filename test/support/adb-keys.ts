import { generateKeyPairSync } from 'node:crypto';

/**
 * A fresh adbkey.pub line, built as adb's own keygen does (AOSP android_pubkey_encode): modulus size in words, n0inv,
 * the modulus and R^2 mod n little-endian, the exponent. For tests that need many keys without running `adb keygen`.
 */
export function newAdbPublicKey(comment = 'test@benchtop'): string {
  const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 65537 });
  const jwk = publicKey.export({ format: 'jwk' });
  const n = BigInt(`0x${Buffer.from(jwk.n!, 'base64url').toString('hex')}`);
  const le = (value: bigint, bytes: number) => {
    const out = Buffer.alloc(bytes);
    for (let i = 0; i < bytes; i++) out[i] = Number((value >> BigInt(8 * i)) & 0xffn);
    return out;
  };
  const word = 2n ** 32n;
  // n0inv = -1 / n[0] mod 2^32
  let inverse = 1n;
  const n0 = n % word;
  for (let i = 0; i < 5; i++) inverse = (inverse * (2n - n0 * inverse)) % word;
  const n0inv = (word - inverse) % word;
  const rr = (1n << 4096n) % n;
  const head = Buffer.alloc(8);
  head.writeUInt32LE(64, 0);
  head.writeUInt32LE(Number(n0inv), 4);
  const e = Buffer.alloc(4);
  e.writeUInt32LE(65537);
  return `${Buffer.concat([head, le(n, 256), le(rr, 256), e]).toString('base64')} ${comment}\n`;
}
