import { describe, expect, it } from 'vitest';
import { FailureBuckets, LoginThrottle } from './login-throttle.js';

describe('FailureBuckets', () => {
  it('lets `burst` failures through, then one per refill period, and refills while nobody fails', () => {
    const b = new FailureBuckets({ burst: 3, refillMs: 1000 });
    for (let i = 0; i < 3; i++) {
      expect(b.waitMs('k', 0)).toBe(0);
      b.take('k', 0);
    }
    expect(b.waitMs('k', 0)).toBe(1000);
    expect(b.waitMs('k', 400)).toBe(600);
    expect(b.waitMs('k', 1000)).toBe(0);
    b.take('k', 1000);
    expect(b.waitMs('k', 1000)).toBe(1000);
    expect(b.waitMs('k', 10_000)).toBe(0);
    expect(b.waitMs('other', 0)).toBe(0);
  });

  it('never owes more than one refill period, however many attempts were taken', () => {
    const b = new FailureBuckets({ burst: 3, refillMs: 1000 });
    for (let i = 0; i < 200; i++) b.take('k', 0);
    expect(b.waitMs('k', 0)).toBe(1000);
  });

  it('takes back a given-back attempt, up to the burst', () => {
    const b = new FailureBuckets({ burst: 1, refillMs: 1000 });
    b.take('k', 0);
    b.giveBack('k', 0);
    b.giveBack('k', 0);
    expect(b.waitMs('k', 0)).toBe(0);
    b.take('k', 0);
    expect(b.waitMs('k', 0)).toBe(1000);
  });
});

describe('LoginThrottle', () => {
  const account = { burst: 2, refillMs: 5000 };
  const address = { burst: 4, refillMs: 1000 };

  it('holds an account however many addresses guess at it, and an address however many accounts it tries', () => {
    const t = new LoginThrottle(account, address);
    t.take({ account: 'a', address: '1' }, 0);
    t.take({ account: 'a', address: '2' }, 0);
    expect(t.waitMs({ account: 'a', address: '3' }, 0)).toBe(5000);
    expect(t.waitMs({ account: 'b', address: '3' }, 0)).toBe(0);
    for (const acc of ['c', 'd', 'e', 'f']) t.take({ account: acc, address: '9' }, 0);
    expect(t.waitMs({ account: 'g', address: '9' }, 0)).toBe(1000);
  });

  it('takes the token when it checks: attempts in flight at once get no more than the burst', () => {
    const t = new LoginThrottle(account, address);
    const letThrough = Array.from({ length: 200 }, () => t.take({ account: 'a', address: '1' }, 0)).filter((r) => r.taken);
    expect(letThrough).toHaveLength(2);
    expect(t.take({ account: 'a', address: '2' }, 0).waitMs).toBe(5000);
  });

  it('gives the tokens of an attempt that did not fail back', () => {
    const t = new LoginThrottle(account, address);
    const first = t.take({ account: 'a', address: '1' }, 0).taken!;
    t.take({ account: 'a', address: '1' }, 0);
    t.notFailed(first, 0);
    expect(t.take({ account: 'a', address: '1' }, 0).waitMs).toBe(0);
  });

  it('does not lock out an address that logged in to the account before', () => {
    const t = new LoginThrottle(account, address);
    const home = { account: 'a', address: 'home' };
    t.succeeded(home, t.take(home, 0).taken!, 0);
    t.take({ account: 'a', address: 'x' }, 0);
    t.take({ account: 'a', address: 'y' }, 0);
    expect(t.waitMs({ account: 'a', address: 'z' }, 0)).toBe(5000);
    expect(t.waitMs(home, 0)).toBe(0);
  });
});
