import type { Balance, Invitation, Member, Organization } from '../../../../shared/api/organizations.js';
import type { Period } from '../../domain/metering.js';
import { iso } from '../../domain/time.js';
import type { InvitationRow } from '../../store/invitations.js';
import type { MemberView, OrganizationWithRole } from '../../store/organizations.js';

/** Organizations, members, invitations and the balance as the API shows them. */

/** `callerId`: whose list this is, so that another member's Personal organization names its owner. */
export const presentOrganization = (o: OrganizationWithRole, callerId?: string): Organization => ({
  id: o.id,
  name: o.name,
  personal: o.personalOf !== null,
  ...(o.personalOf !== null && o.personalOf !== callerId && o.personalOfEmail ? { personalOf: o.personalOfEmail } : {}),
  role: o.role,
  createdAt: iso(o.createdAt),
});

export const presentMember = (m: MemberView): Member => ({
  userId: m.userId,
  email: m.email,
  name: m.name,
  role: m.role,
  joinedAt: iso(m.createdAt),
});

export const presentInvitation = (i: InvitationRow): Invitation => ({
  id: i.id,
  organizationId: i.organizationId,
  organizationName: i.organizationName,
  email: i.email,
  role: i.role,
  status: i.status,
  invitedBy: i.invitedBy,
  invitedByEmail: i.invitedByEmail,
  createdAt: iso(i.createdAt),
  expiresAt: iso(i.expiresAt),
});

export const presentBalance = (b: {
  plan: string;
  period: Period;
  overageCapUsd: number;
  subscription: { status: 'active'; cancelAtPeriodEnd: boolean; currentPeriodEnd: number } | null;
  secondsRemaining: { devices: number; instances: number };
}): Balance => ({
  ...b,
  period: { start: iso(b.period.start), end: iso(b.period.end) },
  subscription: b.subscription && { ...b.subscription, currentPeriodEnd: iso(b.subscription.currentPeriodEnd) },
});
