/**
 * Throttling of failed credential attempts (logins, sign-ups, invitation acceptances), as token buckets: each key
 * (an account, a client address) may fail `burst` times at once, then once per `refillMs`. A bucket refills while
 * nobody fails, so a real owner who mistyped waits seconds, never a lockout; a guesser is held to the refill rate.
 * Pure: the caller passes the time.
 */
export interface ThrottlePolicy {
  burst: number;
  refillMs: number;
}

/** One account: 10 failures at once, then one every 6 s (10 a minute, whoever and however many the guessers are). */
export const ACCOUNT_POLICY: ThrottlePolicy = { burst: 10, refillMs: 6000 };
/** One client address, over every account it tries: 30 failures at once, then one every 2 s. */
export const ADDRESS_POLICY: ThrottlePolicy = { burst: 30, refillMs: 2000 };
/** Past this many tracked keys, full buckets (which hold nothing worth keeping) are dropped. */
const MAX_KEYS = 10_000;

interface Bucket {
  tokens: number;
  at: number;
}

export class FailureBuckets {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly policy: ThrottlePolicy) {}

  /** How long `key` must wait before its next attempt: 0 when it may try now. */
  waitMs(key: string, now: number): number {
    const tokens = this.tokens(key, now);
    return tokens >= 1 ? 0 : Math.ceil((1 - tokens) * this.policy.refillMs);
  }

  /** Spends one attempt of `key`'s bucket: it failed. */
  fail(key: string, now: number): void {
    if (!this.buckets.has(key) && this.buckets.size >= MAX_KEYS) this.prune(now);
    this.buckets.set(key, { tokens: this.tokens(key, now) - 1, at: now });
  }

  get size(): number {
    return this.buckets.size;
  }

  private tokens(key: string, now: number): number {
    const bucket = this.buckets.get(key);
    if (!bucket) return this.policy.burst;
    return Math.min(this.policy.burst, bucket.tokens + Math.max(0, now - bucket.at) / this.policy.refillMs);
  }

  private prune(now: number): void {
    for (const key of this.buckets.keys()) if (this.tokens(key, now) >= this.policy.burst) this.buckets.delete(key);
  }
}

/**
 * The throttle of one kind of attempt: by account and by client address. A pair of account and address that has
 * succeeded before (the owner's own machine) is held only by its address's bucket, so that guessers hammering an
 * account do not lock its owner out of it.
 */
export class LoginThrottle {
  private readonly accounts: FailureBuckets;
  private readonly addresses: FailureBuckets;
  private readonly trusted = new Set<string>();

  constructor(account = ACCOUNT_POLICY, address = ADDRESS_POLICY) {
    this.accounts = new FailureBuckets(account);
    this.addresses = new FailureBuckets(address);
  }

  /** Milliseconds until this attempt may be made; 0 when it may be made now. */
  waitMs(attempt: { account?: string; address: string }, now: number): number {
    const byAddress = this.addresses.waitMs(attempt.address, now);
    if (attempt.account === undefined || this.trusted.has(pair(attempt.account, attempt.address))) return byAddress;
    return Math.max(byAddress, this.accounts.waitMs(attempt.account, now));
  }

  failed(attempt: { account?: string; address: string }, now: number): void {
    this.addresses.fail(attempt.address, now);
    if (attempt.account !== undefined) this.accounts.fail(attempt.account, now);
  }

  succeeded(attempt: { account?: string; address: string }): void {
    if (attempt.account === undefined) return;
    if (this.trusted.size >= MAX_KEYS) this.trusted.clear();
    this.trusted.add(pair(attempt.account, attempt.address));
  }
}

const pair = (account: string, address: string) => `${account}\n${address}`;
