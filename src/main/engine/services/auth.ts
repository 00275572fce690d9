import { SignJWT, jwtVerify } from 'jose';
import { forbidden, unauthorized } from '../domain/errors.js';
import { atLeast, type Role } from '../domain/roles.js';
import type { UserRow } from '../store/users.js';
import { API_KEY_PREFIX, hashApiKey, sameHash } from './credentials.js';
import type { Caller, EngineContext, Scope } from './context.js';

const ISSUER = 'benchtop';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** lastUsedAt is kept to the second; writing it on every request would put a disk sync on the hot path. */
const LAST_USED_RESOLUTION_MS = 1000;

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

/** Turns an Authorization header into a caller, or throws unauthorized. */
export async function authenticate(ctx: EngineContext, authorization: string | undefined): Promise<Caller> {
  const match = /^Bearer ([^\s]+)$/i.exec(authorization ?? '');
  if (!match) throw unauthorized('Send Authorization: Bearer <API key or token>.');
  const bearer = match[1]!;
  return bearer.startsWith(API_KEY_PREFIX) ? authenticateKey(ctx, bearer) : authenticateToken(ctx, bearer);
}

function authenticateKey(ctx: EngineContext, apiKey: string): Caller {
  const hash = hashApiKey(apiKey);
  const key = ctx.stores.apiKeys.getByHash(hash);
  if (!key || !sameHash(key.secretHash, hash)) throw unauthorized('The API key is invalid or has been deleted.');
  const user = ctx.stores.users.get(key.createdBy);
  if (!user) throw unauthorized('The API key is invalid or has been deleted.');
  const now = ctx.now();
  if (key.lastUsedAt === null || now - key.lastUsedAt >= LAST_USED_RESOLUTION_MS) ctx.stores.apiKeys.touch(key.id, now);
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
  const user = subject ? ctx.stores.users.get(subject) : undefined;
  if (!user) throw unauthorized('The token is invalid or has expired. Log in again.');
  return { kind: 'user', user };
}

/**
 * The organization a request acts on: X-Organization-Id, else the key's organization, else Personal.
 * The role is read now, so a role change applies on the member's next request. An API key acts with the
 * current role of the member who created it, and loses access when that member leaves.
 */
export function resolveScope(ctx: EngineContext, caller: Caller, organizationHeader: string | undefined): Scope {
  const wanted = organizationHeader?.trim() || caller.key?.organizationId || ctx.stores.organizations.personalOf(caller.user.id)?.id;
  if (caller.key && wanted !== caller.key.organizationId) {
    throw forbidden('wrong_organization', 'This API key is bound to another organization.');
  }
  const notMember = forbidden('not_a_member', 'You are not a member of that organization.');
  if (!wanted || !UUID.test(wanted)) throw notMember;
  const membership = ctx.stores.organizations.membership(wanted, caller.user.id);
  if (!membership) {
    if (caller.key) throw unauthorized('The API key is no longer valid: its creator left the organization.');
    throw notMember;
  }
  const organization = ctx.stores.organizations.get(wanted)!;
  return { caller, organization, role: membership.role };
}

export function requireInteractive(caller: Caller): void {
  if (caller.kind === 'key') throw forbidden('interactive_only', 'This operation needs an interactive login, not an API key.');
}

export function requireRole(role: Role, required: Role): void {
  if (!atLeast(role, required)) {
    throw forbidden('insufficient_role', `This operation needs the ${required} role or higher; you have ${role}.`);
  }
}
