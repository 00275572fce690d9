/**
 * Throttling of failed credential attempts (logins, sign-ups, invitation acceptances), as token buckets: each key
 * (an account, a client address) may fail `burst` times at once, then once per `refillMs`. An attempt takes its token
 * when it is checked, before the slow password hash, so that attempts in flight at once cannot all pass; a success
 * (or any answer that is no failure) gives it back. A bucket never goes below empty, so the longest wait is one
 * refill period: a real owner who mistyped, or who logs in after a burst of guesses, waits seconds, never a lockout;
 * a guesser is held to the refill rate. Pure: the caller passes the time.
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

  /** Spends one attempt of `key`'s bucket; an empty bucket stays empty (no debt beyond one refill period). */
  take(key: string, now: number): void {
    if (!this.buckets.has(key) && this.buckets.size >= MAX_KEYS) this.prune(now);
    this.buckets.set(key, { tokens: Math.max(0, this.tokens(key, now) - 1), at: now });
  }

  /** Returns an attempt taken from `key`'s bucket: it did not fail. */
  giveBack(key: string, now: number): void {
    const bucket = this.buckets.get(key);
    if (bucket) this.buckets.set(key, { tokens: Math.min(this.policy.burst, this.tokens(key, now) + 1), at: now });
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

/** One attempt: the account it tries (if any) and the client address it comes from. */
export interface Attempt {
  account?: string;
  address: string;
}

/** What `take` spent for an attempt that may go ahead, to be given back if it does not fail. */
export interface Taken {
  address: string;
  account?: string;
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
  waitMs(attempt: Attempt, now: number): number {
    const byAddress = this.addresses.waitMs(attempt.address, now);
    const account = this.heldAccount(attempt);
    return account === undefined ? byAddress : Math.max(byAddress, this.accounts.waitMs(account, now));
  }

  /**
   * Checks an attempt and, in the same step, takes its tokens: `{waitMs: 0, taken}` when it may be made now (what it
   * spent, for `succeeded` or `notFailed`), else `{waitMs}` and nothing spent.
   */
  take(attempt: Attempt, now: number): { waitMs: number; taken?: Taken } {
    const waitMs = this.waitMs(attempt, now);
    if (waitMs > 0) return { waitMs };
    const account = this.heldAccount(attempt);
    this.addresses.take(attempt.address, now);
    if (account !== undefined) this.accounts.take(account, now);
    return { waitMs, taken: account === undefined ? { address: attempt.address } : { address: attempt.address, account } };
  }

  /** The attempt was neither a success nor a failure (a bad request, an error of ours): its tokens go back. */
  notFailed(taken: Taken, now: number): void {
    this.addresses.giveBack(taken.address, now);
    if (taken.account !== undefined) this.accounts.giveBack(taken.account, now);
  }

  /** The attempt succeeded: its tokens go back, and its account trusts its address from now on. */
  succeeded(attempt: Attempt, taken: Taken, now: number): void {
    this.notFailed(taken, now);
    if (attempt.account === undefined) return;
    if (this.trusted.size >= MAX_KEYS) this.trusted.clear();
    this.trusted.add(pair(attempt.account, attempt.address));
  }

  /** The account bucket that holds this attempt: none without an account, or from an address the account trusts. */
  private heldAccount(attempt: Attempt): string | undefined {
    if (attempt.account === undefined || this.trusted.has(pair(attempt.account, attempt.address))) return undefined;
    return attempt.account;
  }
}

const pair = (account: string, address: string) => `${account}\n${address}`;
