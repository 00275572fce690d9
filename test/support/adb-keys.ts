import { randomBytes } from 'node:crypto';

/**
 * A fresh adbkey.pub line, encoded as adb's own keygen does (AOSP android_pubkey_encode): modulus size in words, n0inv,
 * the modulus and R^2 mod n little-endian, the exponent. For tests that need many keys without running `adb keygen`.
 *
 * The modulus is a random odd 2048-bit number rather than a product of two primes: these keys are only registered and
 * listed, never used to sign (the tests that sign run Debian's adb with a key of its own), and a public key alone
 * cannot show which it is. Generating a real RSA key pair took 30-300 ms of CPU each, 3.3 s of authorization.test's 8.7.
 */
export function newAdbPublicKey(comment = 'test@benchtop'): string {
  const modulus = randomBytes(256);
  modulus[0]! |= 0x80;
  modulus[255]! |= 1;
  const n = BigInt(`0x${modulus.toString('hex')}`);
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
