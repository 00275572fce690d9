import { SignJWT, jwtVerify } from 'jose';
import { forbidden, unauthorized } from '../domain/errors.js';
import { atLeast, type Role } from '../domain/roles.js';
import type { ApiKeyWithHash } from '../store/api-keys.js';
import type { MembershipRow, OrganizationRow } from '../store/organizations.js';
import type { UserRow } from '../store/users.js';
import { API_KEY_PREFIX, hashApiKey, sameHash } from './credentials.js';
import { perContext, VersionedCache } from './cache.js';
import type { Caller, EngineContext, Scope } from './context.js';

const ISSUER = 'benchtop';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** lastUsedAt is kept to the second; writing it on every request would put a disk sync on the hot path. */
const LAST_USED_RESOLUTION_MS = 1000;
/**
 * What authorization reads on every request (keys, accounts, memberships, organizations) stays in memory until
 * the next write to any of them, so a deleted key or a role change is seen by the very next request.
 */
const cacheOf = perContext((ctx: EngineContext) => new VersionedCache(() => ctx.stores.authVersion.value));

const userOf = (ctx: EngineContext, id: string) => cacheOf(ctx).memo(`user:${id}`, () => ctx.stores.users.get(id));

/** The membership and its organization, or undefined for a non-member. */
function membershipOf(ctx: EngineContext, organizationId: string, userId: string) {
  return cacheOf(ctx).memo(`member:${organizationId}:${userId}`, (): { membership: MembershipRow; organization: OrganizationRow } | undefined => {
    const membership = ctx.stores.organizations.membership(organizationId, userId);
    return membership && { membership, organization: ctx.stores.organizations.get(organizationId)! };
  });
}

export async function issueToken(ctx: EngineContext, user: UserRow): Promise<{ token: string; expiresAt: number }> {
  const now = ctx.now();
  const expiresAt = now + ctx.config.tokenTtlSeconds * 1000;
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(user.id)
    .setIssuer(ISSUER)
    .setIssuedAt(Math.floor(now / 1000))
    .setExpirationTime(Math.floor(expiresAt / 1000))
    .sign(ctx.tokenSecret);
  return { token, expiresAt };
}

/**
 * Turns an Authorization header into a caller, or throws unauthorized. API keys resolve synchronously (the hot
 * path of CI clients); only a token needs a promise, for its signature check.
 */
export function authenticate(ctx: EngineContext, authorization: string | undefined): Caller | Promise<Caller> {
  const match = /^Bearer ([^\s]+)$/i.exec(authorization ?? '');
  if (!match) throw unauthorized('Send Authorization: Bearer <API key or token>.');
  const bearer = match[1]!;
  return bearer.startsWith(API_KEY_PREFIX) ? authenticateKey(ctx, bearer) : authenticateToken(ctx, bearer);
}

/** When each key's lastUsedAt was last written, so that the cached row need not be reloaded to decide. */
const lastTouched = new WeakMap<ApiKeyWithHash, number>();

function authenticateKey(ctx: EngineContext, apiKey: string): Caller {
  const hash = hashApiKey(apiKey);
  const key = cacheOf(ctx).memo(`key:${hash}`, () => ctx.stores.apiKeys.getByHash(hash));
  const user = key && sameHash(key.secretHash, hash) ? userOf(ctx, key.createdBy) : undefined;
  if (!key || !user) throw unauthorized('The API key is invalid or has been deleted.');
  const now = ctx.now();
  const touched = lastTouched.get(key) ?? key.lastUsedAt;
  if (touched === null || now - touched >= LAST_USED_RESOLUTION_MS) {
    ctx.stores.apiKeys.touch(key.id, now);
    lastTouched.set(key, now);
  }
  return { kind: 'key', user, key: { id: key.id, organizationId: key.organizationId } };
}

async function authenticateToken(ctx: EngineContext, token: string): Promise<Caller> {
  let subject: string | undefined;
  try {
    const { payload } = await jwtVerify(token, ctx.tokenSecret, {
      issuer: ISSUER,
      algorithms: ['HS256'],
      currentDate: new Date(ctx.now()),
    });
    subject = payload.sub;
  } catch {
    throw unauthorized('The token is invalid or has expired. Log in again.');
  }
  // A deleted account's tokens stop working even before they expire.
  const user = subject ? userOf(ctx, subject) : undefined;
  if (!user) throw unauthorized('The token is invalid or has expired. Log in again.');
  return { kind: 'user', user };
}

/**
 * The organization a request acts on: X-Organization-Id, else the key's organization, else Personal.
 * The role is the current one, so a role change applies on the member's next request. An API key acts with the
 * current role of the member who created it, and loses access when that member leaves.
 */
export function resolveScope(ctx: EngineContext, caller: Caller, organizationHeader: string | undefined): Scope {
  const wanted =
    organizationHeader?.trim() ||
    caller.key?.organizationId ||
    cacheOf(ctx).memo(`personal:${caller.user.id}`, () => ctx.stores.organizations.personalOf(caller.user.id)?.id);
  if (caller.key && wanted !== caller.key.organizationId) {
    throw forbidden('wrong_organization', 'This API key is bound to another organization.');
  }
  const found = wanted && UUID.test(wanted) ? membershipOf(ctx, wanted, caller.user.id) : undefined;
  if (!found) {
    if (caller.key) throw unauthorized('The API key is no longer valid: its creator left the organization.');
    throw forbidden('not_a_member', 'You are not a member of that organization.');
  }
  return { caller, organization: found.organization, role: found.membership.role };
}

export function requireInteractive(caller: Caller): void {
  if (caller.kind === 'key') throw forbidden('interactive_only', 'This operation needs an interactive login, not an API key.');
}

export function requireRole(role: Role, required: Role): void {
  if (!atLeast(role, required)) {
    throw forbidden('insufficient_role', `This operation needs the ${required} role or higher; you have ${role}.`);
  }
}
