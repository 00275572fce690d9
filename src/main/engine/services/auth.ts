import { SignJWT, jwtVerify } from 'jose';
import { webcrypto } from 'node:crypto';
import { forbidden, unauthorized } from '../domain/errors.js';
import { atLeast, type Role } from '../domain/roles.js';
import type { ApiKeyWithHash } from '../store/api-keys.js';
import type { MembershipRow, OrganizationRow } from '../store/organizations.js';
import type { UserRow } from '../store/users.js';
import { API_KEY_PREFIX, hashApiKey, sameHash } from './credentials.js';
import { VersionedCache } from './cache.js';
import type { EngineConfig } from '../config.js';
import type { Stores } from '../store/index.js';
import type { Caller, Clock, Scope } from './scope.js';

const ISSUER = 'benchtop';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** lastUsedAt is kept to the second; writing it on every request would put a disk sync on the hot path. */
const LAST_USED_RESOLUTION_MS = 1000;
/**
 * Tokens whose signature was checked, kept by the token itself: a GUI sends its token with every request, and jose's
 * check of one cost about 50-90 µs of CPU against about 1 µs for the lookup. A signature cannot change, so only the
 * expiry and the account are looked at again; a stranger's string never enters (only a token that verified does).
 */
const CHECKED_TOKENS = 1024;

/** When each key's lastUsedAt was last written, so that the cached row need not be reloaded to decide. */
const lastTouched = new WeakMap<ApiKeyWithHash, number>();

export function requireInteractive(caller: Caller): void {
  if (caller.kind === 'key') throw forbidden('interactive_only', 'This operation needs an interactive login, not an API key.');
}

export function requireRole(role: Role, required: Role): void {
  if (!atLeast(role, required)) {
    throw forbidden('insufficient_role', `This operation needs the ${required} role or higher; you have ${role}.`);
  }
}

/** Who is calling (an API key or an interactive token), and in which organization, as of this request. */
export class Auth {
  /**
   * What authorization reads on every request (keys, accounts, memberships, organizations) stays in memory until
   * the next write to any of them, so a deleted key or a role change is seen by the very next request.
   */
  private readonly cache: VersionedCache;
  /** Tokens whose signature verified: each one's subject and expiry (JWT seconds), oldest first. */
  private readonly checkedTokens = new Map<string, { subject: string; expires: number }>();

  constructor(
    private readonly stores: Pick<Stores, 'users' | 'organizations' | 'apiKeys' | 'authVersion'>,
    /** HMAC key for interactive tokens, generated once per data dir. */
    private readonly tokenSecret: Uint8Array,
    private readonly config: Pick<EngineConfig, 'tokenTtlSeconds'>,
    private readonly now: Clock,
  ) {
    this.cache = new VersionedCache(() => stores.authVersion.value);
  }

  /**
   * The token secret as a WebCrypto key, imported once: given the raw bytes, jose imports them again for every token
   * it checks, and a request with a token cost the engine about 160 µs of CPU for it instead of about 50 µs.
   */
  private tokenKey: Promise<webcrypto.CryptoKey> | undefined;
  private key(): Promise<webcrypto.CryptoKey> {
    return (this.tokenKey ??= webcrypto.subtle.importKey('raw', new Uint8Array(this.tokenSecret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']));
  }

  private userOf(id: string) {
    return this.cache.memo(`user:${id}`, () => this.stores.users.get(id));
  }

  /** The membership and its organization, or undefined for a non-member. */
  private membership(organizationId: string, userId: string) {
    return this.cache.memo(`member:${organizationId}:${userId}`, (): { membership: MembershipRow; organization: OrganizationRow } | undefined => {
      const membership = this.stores.organizations.membership(organizationId, userId);
      return membership && { membership, organization: this.stores.organizations.get(organizationId)! };
    });
  }

  async issueToken(user: UserRow): Promise<{ token: string; expiresAt: number }> {
    const now = this.now();
    const expiresAt = now + this.config.tokenTtlSeconds * 1000;
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(user.id)
      .setIssuer(ISSUER)
      .setIssuedAt(Math.floor(now / 1000))
      .setExpirationTime(Math.floor(expiresAt / 1000))
      .sign(await this.key());
    return { token, expiresAt };
  }

  /**
   * Turns an Authorization header into a caller, or throws unauthorized. API keys resolve synchronously (the hot
   * path of CI clients), and so does a token checked before; only a token not seen yet needs a promise, for its
   * signature check.
   */
  authenticate(authorization: string | undefined): Caller | Promise<Caller> {
    const match = /^Bearer ([^\s]+)$/i.exec(authorization ?? '');
    if (!match) throw unauthorized('Send Authorization: Bearer <API key or token>.');
    const bearer = match[1]!;
    return bearer.startsWith(API_KEY_PREFIX) ? this.authenticateKey(bearer) : this.authenticateToken(bearer);
  }

  private authenticateKey(apiKey: string): Caller {
    const hash = hashApiKey(apiKey);
    const key = this.cache.memo(`key:${hash}`, () => this.stores.apiKeys.getByHash(hash));
    const user = key && sameHash(key.secretHash, hash) ? this.userOf(key.createdBy) : undefined;
    if (!key || !user) throw unauthorized('The API key is invalid or has been deleted.');
    const now = this.now();
    const touched = lastTouched.get(key) ?? key.lastUsedAt;
    if (touched === null || now - touched >= LAST_USED_RESOLUTION_MS) {
      this.stores.apiKeys.touch(key.id, now);
      lastTouched.set(key, now);
    }
    return { kind: 'key', user, key: { id: key.id, organizationId: key.organizationId } };
  }

  private authenticateToken(token: string): Caller | Promise<Caller> {
    const checked = this.checkedTokens.get(token);
    if (!checked) return this.verifyToken(token).then((subject) => this.tokenCaller(subject));
    // As jose decides: a token has expired once its exp is not after the current second.
    if (checked.expires > Math.floor(this.now() / 1000)) return this.tokenCaller(checked.subject);
    this.checkedTokens.delete(token);
    return this.tokenCaller(undefined);
  }

  /** The token's subject once its signature, issuer and expiry check out; undefined otherwise. */
  private async verifyToken(token: string): Promise<string | undefined> {
    try {
      const { payload } = await jwtVerify(token, await this.key(), {
        issuer: ISSUER,
        algorithms: ['HS256'],
        currentDate: new Date(this.now()),
      });
      if (payload.sub && typeof payload.exp === 'number') {
        this.checkedTokens.set(token, { subject: payload.sub, expires: payload.exp });
        if (this.checkedTokens.size > CHECKED_TOKENS) this.checkedTokens.delete(this.checkedTokens.keys().next().value!);
      }
      return payload.sub;
    } catch {
      return undefined;
    }
  }

  private tokenCaller(subject: string | undefined): Caller {
    // A deleted account's tokens stop working even before they expire.
    const user = subject ? this.userOf(subject) : undefined;
    if (!user) throw unauthorized('The token is invalid or has expired. Log in again.');
    return { kind: 'user', user };
  }

  /**
   * The organization a request acts on: X-Organization-Id, else the key's organization, else Personal.
   * The role is the current one, so a role change applies on the member's next request. An API key acts with the
   * current role of the member who created it, and loses access when that member leaves.
   */
  resolveScope(caller: Caller, organizationHeader: string | undefined): Scope {
    const wanted =
      organizationHeader?.trim() ||
      caller.key?.organizationId ||
      this.cache.memo(`personal:${caller.user.id}`, () => this.stores.organizations.personalOf(caller.user.id)?.id);
    if (caller.key && wanted !== caller.key.organizationId) {
      throw forbidden('wrong_organization', 'This API key is bound to another organization.');
    }
    const found = wanted && UUID.test(wanted) ? this.membership(wanted, caller.user.id) : undefined;
    if (!found) {
      if (caller.key) throw unauthorized('The API key is no longer valid: its creator left the organization.');
      throw forbidden('not_a_member', 'You are not a member of that organization.');
    }
    return { caller, organization: found.organization, role: found.membership.role };
  }
}
