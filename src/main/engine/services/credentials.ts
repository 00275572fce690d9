import { createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number, options: object) => Promise<Buffer>;
/**
 * scrypt's cost: 16 MiB and about 50 ms of a core per hash. The test suite signs up and logs in thousands of times, so
 * under `NODE_ENV=test` (which vitest sets, and the engines it starts inherit) BENCHTOP_TEST_SCRYPT_N may lower it, as
 * Rails' and Django's test settings lower bcrypt's; outside tests it is never read.
 */
const SCRYPT = { N: scryptCost(process.env), r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

export function scryptCost(env: NodeJS.ProcessEnv): number {
  const asked = Number(env.BENCHTOP_TEST_SCRYPT_N);
  return env.NODE_ENV === 'test' && Number.isInteger(asked) && asked >= 2 && (asked & (asked - 1)) === 0 ? asked : 16384;
}
const KEY_LENGTH = 32;

/** Passwords are stored as scrypt hashes: `scrypt$<salt b64>$<hash b64>`. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scryptAsync(password, salt, KEY_LENGTH, SCRYPT);
  return `scrypt$${salt.toString('base64')}$${hash.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await scryptAsync(password, Buffer.from(salt, 'base64'), expected.length, SCRYPT);
  return timingSafeEqual(actual, expected);
}

export const API_KEY_PREFIX = 'mob_';

/** A new API key secret. Only its hash is stored. */
export function newApiKey(): { apiKey: string; secretHash: string; suffix: string } {
  const apiKey = API_KEY_PREFIX + randomBytes(32).toString('base64url');
  return { apiKey, secretHash: hashApiKey(apiKey), suffix: apiKey.slice(-6) };
}

/** API keys carry 256 random bits, so a plain SHA-256 is a safe, fast lookup hash (no salt or stretching needed). */
export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey).digest('hex');
}

export function sameHash(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

export function generatePassword(): string {
  return randomBytes(18).toString('base64url');
}
