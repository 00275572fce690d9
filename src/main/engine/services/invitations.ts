import { createHmac, randomUUID } from 'node:crypto';
import { JOIN_PATH } from '../../../shared/api/join-path.js';
import { conflict, forbidden, notFound, ServiceError } from '../domain/errors.js';
import { reachableOrigin } from '../domain/reachable-origin.js';
import type { Role } from '../domain/roles.js';
import type { InvitationRow } from '../store/invitations.js';
import type { UserRow } from '../store/users.js';
import { requireInteractive, requireRole } from './auth.js';
import { hashApiKey } from './credentials.js';
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
    private readonly links: {
      /** The lab's HMAC key: a link's secret is derived from the invitation's id, so the admin's list can show it again. */
      tokenSecret: Uint8Array;
      /** LAN sharing's origins now; empty while it is off. */
      lanUrls: () => readonly string[];
    },
  ) {}

  private secretOf(invitationId: string): string {
    return createHmac('sha256', this.links.tokenSecret).update(`invitation:${invitationId}`).digest('base64url');
  }

  /** The invitation's link, at the origin its reader (the admin, then the invitee) can reach; see reachableOrigin. */
  linkOf(invitation: InvitationRow, readerOrigin: string): string {
    return `${reachableOrigin(readerOrigin, this.links.lanUrls())}${JOIN_PATH}/${this.secretOf(invitation.id)}`;
  }

  /**
   * The pending invitation whose link carries this secret. One that no longer opens says why, so that the invitee
   * knows to ask for a new link rather than retype it.
   */
  bySecret(secret: string): InvitationRow {
    const inv = this.stores.invitations.getBySecretHash(hashApiKey(secret));
    if (!inv) throw new ServiceError('not_found', 'invitation_not_found', 'This invitation link is not valid: ask for a new one.');
    if (inv.status === 'revoked') throw new ServiceError('not_found', 'invitation_revoked', 'This invitation was revoked: ask for a new one.');
    if (inv.status !== 'pending') throw new ServiceError('not_found', 'invitation_used', 'This invitation was already used: sign in instead.');
    if (inv.expiresAt <= this.now()) throw new ServiceError('not_found', 'invitation_expired', 'This invitation has expired: ask for a new one.');
    return inv;
  }

  /** bySecret, for signing up as `email`: only the invited email may use it. */
  forSignup(secret: string, email: string): InvitationRow {
    const inv = this.bySecret(secret);
    if (inv.email.toLowerCase() !== email.trim().toLowerCase()) {
      throw forbidden('invitation_email_mismatch', `This invitation is for ${inv.email}: sign up with that email.`);
    }
    return inv;
  }

  /** Makes a just-created account a member with the invited role; runs inside the sign-up's transaction. */
  admitNewAccount(secret: string, user: UserRow): void {
    const inv = this.forSignup(secret, user.email);
    const now = this.now();
    this.stores.organizations.addMember(inv.organizationId, user.id, inv.role, now);
    this.stores.invitations.settle(inv.id, 'accepted', now);
  }

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
    const pending = this.stores.invitations.pendingOfOrganization(org.id, this.now());
    // An invitation made before links carried a secret gets one now: a no-op for the others.
    for (const inv of pending) this.stores.invitations.giveSecretHash(inv.id, hashApiKey(this.secretOf(inv.id)));
    return pending;
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
        secretHash: hashApiKey(this.secretOf(id)),
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
