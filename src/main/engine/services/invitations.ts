import { randomUUID } from 'node:crypto';
import { conflict, notFound } from '../domain/errors.js';
import type { Role } from '../domain/roles.js';
import type { InvitationRow } from '../store/invitations.js';
import { requireInteractive, requireRole } from './auth.js';
import type { Caller } from './scope.js';
import type { Organizations } from './organizations.js';
import type { EngineConfig } from '../config.js';
import type { Stores } from '../store/index.js';
import type { Clock } from './scope.js';

const DAY_MS = 24 * 3600 * 1000;

export class Invitations {
  constructor(
    private readonly stores: Pick<Stores, 'db' | 'organizations' | 'invitations'>,
    private readonly organizations: Pick<Organizations, 'membershipOf'>,
    private readonly config: Pick<EngineConfig, 'invitationTtlDays'>,
    private readonly now: Clock,
  ) {}

  /** Pending, unexpired invitations addressed to the caller's email, across organizations. */
  listMyInvitations(caller: Caller): InvitationRow[] {
    requireInteractive(caller);
    return this.stores.invitations.pendingForEmail(caller.user.email, this.now());
  }

  /** An invitation the caller may answer: pending, unexpired and addressed to them; anything else is not found. */
  private myPendingInvitation(caller: Caller, invitationId: string): InvitationRow {
    requireInteractive(caller);
    const inv = this.stores.invitations.get(invitationId);
    const mine = inv && inv.status === 'pending' && inv.expiresAt > this.now() && inv.email.toLowerCase() === caller.user.email.toLowerCase();
    if (!mine) throw notFound('invitation');
    return inv;
  }

  acceptInvitation(caller: Caller, invitationId: string): void {
    const { invitations, organizations, db } = this.stores;
    db.transaction(() => {
      const inv = this.myPendingInvitation(caller, invitationId);
      const now = this.now();
      if (!organizations.membership(inv.organizationId, caller.user.id)) {
        organizations.addMember(inv.organizationId, caller.user.id, inv.role, now);
      }
      invitations.settle(inv.id, 'accepted', now);
    }).immediate();
  }

  rejectInvitation(caller: Caller, invitationId: string): void {
    const { invitations, db } = this.stores;
    db.transaction(() => {
      const inv = this.myPendingInvitation(caller, invitationId);
      invitations.settle(inv.id, 'rejected', this.now());
    }).immediate();
  }

  private adminOf(caller: Caller, organizationId: string) {
    const org = this.organizations.membershipOf(caller, organizationId);
    requireRole(org.role, 'admin');
    return org;
  }

  listOrganizationInvitations(caller: Caller, organizationId: string): InvitationRow[] {
    const org = this.adminOf(caller, organizationId);
    return this.stores.invitations.pendingOfOrganization(org.id, this.now());
  }

  inviteMember(caller: Caller, organizationId: string, email: string, role: Role): InvitationRow {
    const { invitations, organizations, db } = this.stores;
    return db.transaction(() => {
      const org = this.adminOf(caller, organizationId);
      const now = this.now();
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
        expiresAt: now + this.config.invitationTtlDays * DAY_MS,
      });
      return invitations.get(id)!;
    }).immediate();
  }

  revokeInvitation(caller: Caller, organizationId: string, invitationId: string): void {
    const { invitations, db } = this.stores;
    db.transaction(() => {
      const org = this.adminOf(caller, organizationId);
      const inv = invitations.get(invitationId);
      if (!inv || inv.organizationId !== org.id || inv.status !== 'pending' || inv.expiresAt <= this.now()) {
        throw notFound('invitation');
      }
      invitations.settle(inv.id, 'revoked', this.now());
    }).immediate();
  }
}
