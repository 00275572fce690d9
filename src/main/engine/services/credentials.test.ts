import { describe, expect, it } from 'vitest';
import { hashPassword, scryptCost, verifyPassword } from './credentials.js';

describe('password hashing', () => {
  it('uses scrypt at N=16384 unless a test run lowers it, which only NODE_ENV=test may', () => {
    expect(scryptCost({})).toBe(16384);
    expect(scryptCost({ BENCHTOP_TEST_SCRYPT_N: '1024' })).toBe(16384);
    expect(scryptCost({ NODE_ENV: 'production', BENCHTOP_TEST_SCRYPT_N: '1024' })).toBe(16384);
    expect(scryptCost({ NODE_ENV: 'test', BENCHTOP_TEST_SCRYPT_N: '1024' })).toBe(1024);
    // Not a power of two, or nonsense: the real cost.
    expect(scryptCost({ NODE_ENV: 'test', BENCHTOP_TEST_SCRYPT_N: '1000' })).toBe(16384);
    expect(scryptCost({ NODE_ENV: 'test', BENCHTOP_TEST_SCRYPT_N: 'low' })).toBe(16384);
  });

  it('stores a salted hash that verifies the password and nothing else', async () => {
    const stored = await hashPassword('correct horse');
    expect(stored).toMatch(/^scrypt\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    expect(stored).not.toContain('correct horse');
    expect(await hashPassword('correct horse')).not.toBe(stored);
    expect(await verifyPassword('correct horse', stored)).toBe(true);
    expect(await verifyPassword('correct horsf', stored)).toBe(false);
  });
});
