import { randomUUID } from 'node:crypto';
import { conflict, notFound } from '../domain/errors.js';
import type { Role } from '../domain/roles.js';
import type { InvitationRow } from '../store/invitations.js';
import { requireInteractive, requireRole } from './auth.js';
import type { Caller, EngineContext } from './context.js';
import { membershipOf } from './organizations.js';

const DAY_MS = 24 * 3600 * 1000;

/** Pending, unexpired invitations addressed to the caller's email, across organizations. */
export function listMyInvitations(ctx: EngineContext, caller: Caller): InvitationRow[] {
  requireInteractive(caller);
  return ctx.stores.invitations.pendingForEmail(caller.user.email, ctx.now());
}

/** An invitation the caller may answer: pending, unexpired and addressed to them; anything else is not found. */
function myPendingInvitation(ctx: EngineContext, caller: Caller, invitationId: string): InvitationRow {
  requireInteractive(caller);
  const inv = ctx.stores.invitations.get(invitationId);
  const mine = inv && inv.status === 'pending' && inv.expiresAt > ctx.now() && inv.email.toLowerCase() === caller.user.email.toLowerCase();
  if (!mine) throw notFound('invitation');
  return inv;
}

export function acceptInvitation(ctx: EngineContext, caller: Caller, invitationId: string): void {
  const { invitations, organizations, db } = ctx.stores;
  db.transaction(() => {
    const inv = myPendingInvitation(ctx, caller, invitationId);
    const now = ctx.now();
    if (!organizations.membership(inv.organizationId, caller.user.id)) {
      organizations.addMember(inv.organizationId, caller.user.id, inv.role, now);
    }
    invitations.settle(inv.id, 'accepted', now);
  }).immediate();
}

export function rejectInvitation(ctx: EngineContext, caller: Caller, invitationId: string): void {
  const { invitations, db } = ctx.stores;
  db.transaction(() => {
    const inv = myPendingInvitation(ctx, caller, invitationId);
    invitations.settle(inv.id, 'rejected', ctx.now());
  }).immediate();
}

function adminOf(ctx: EngineContext, caller: Caller, organizationId: string) {
  const org = membershipOf(ctx, caller, organizationId);
  requireRole(org.role, 'admin');
  return org;
}

export function listOrganizationInvitations(ctx: EngineContext, caller: Caller, organizationId: string): InvitationRow[] {
  const org = adminOf(ctx, caller, organizationId);
  return ctx.stores.invitations.pendingOfOrganization(org.id, ctx.now());
}

export function inviteMember(ctx: EngineContext, caller: Caller, organizationId: string, email: string, role: Role): InvitationRow {
  const { invitations, organizations, db } = ctx.stores;
  return db.transaction(() => {
    const org = adminOf(ctx, caller, organizationId);
    const now = ctx.now();
    const address = email.trim();
    if (organizations.isMemberByEmail(org.id, address)) {
      throw conflict('already_member', 'That email already belongs to a member of this organization.');
    }
    if (invitations.pendingFor(org.id, address, now)) {
      throw conflict('already_invited', 'That email already has a pending invitation to this organization.');
    }
    const id = randomUUID();
    invitations.insert({
      id,
      organizationId: org.id,
      email: address,
      role,
      invitedBy: caller.user.id,
      createdAt: now,
      expiresAt: now + ctx.config.invitationTtlDays * DAY_MS,
    });
    return invitations.get(id)!;
  }).immediate();
}

export function revokeInvitation(ctx: EngineContext, caller: Caller, organizationId: string, invitationId: string): void {
  const { invitations, db } = ctx.stores;
  db.transaction(() => {
    const org = adminOf(ctx, caller, organizationId);
    const inv = invitations.get(invitationId);
    if (!inv || inv.organizationId !== org.id || inv.status !== 'pending' || inv.expiresAt <= ctx.now()) {
      throw notFound('invitation');
    }
    invitations.settle(inv.id, 'revoked', ctx.now());
  }).immediate();
}
