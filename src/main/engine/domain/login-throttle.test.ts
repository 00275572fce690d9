import { describe, expect, it } from 'vitest';
import { FailureBuckets, LoginThrottle } from './login-throttle.js';

describe('FailureBuckets', () => {
  it('lets `burst` failures through, then one per refill period, and refills while nobody fails', () => {
    const b = new FailureBuckets({ burst: 3, refillMs: 1000 });
    for (let i = 0; i < 3; i++) {
      expect(b.waitMs('k', 0)).toBe(0);
      b.fail('k', 0);
    }
    expect(b.waitMs('k', 0)).toBe(1000);
    expect(b.waitMs('k', 400)).toBe(600);
    expect(b.waitMs('k', 1000)).toBe(0);
    b.fail('k', 1000);
    expect(b.waitMs('k', 1000)).toBe(1000);
    expect(b.waitMs('k', 10_000)).toBe(0);
    expect(b.waitMs('other', 0)).toBe(0);
  });
});

describe('LoginThrottle', () => {
  const account = { burst: 2, refillMs: 5000 };
  const address = { burst: 4, refillMs: 1000 };

  it('holds an account however many addresses guess at it, and an address however many accounts it tries', () => {
    const t = new LoginThrottle(account, address);
    t.failed({ account: 'a', address: '1' }, 0);
    t.failed({ account: 'a', address: '2' }, 0);
    expect(t.waitMs({ account: 'a', address: '3' }, 0)).toBe(5000);
    expect(t.waitMs({ account: 'b', address: '3' }, 0)).toBe(0);
    for (const acc of ['c', 'd', 'e', 'f']) t.failed({ account: acc, address: '9' }, 0);
    expect(t.waitMs({ account: 'g', address: '9' }, 0)).toBe(1000);
  });

  it('does not lock out an address that logged in to the account before', () => {
    const t = new LoginThrottle(account, address);
    t.succeeded({ account: 'a', address: 'home' });
    t.failed({ account: 'a', address: 'x' }, 0);
    t.failed({ account: 'a', address: 'y' }, 0);
    expect(t.waitMs({ account: 'a', address: 'z' }, 0)).toBe(5000);
    expect(t.waitMs({ account: 'a', address: 'home' }, 0)).toBe(0);
  });
});
