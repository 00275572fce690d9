import { randomUUID } from 'node:crypto';
import { conflict, forbidden, notFound } from '../domain/errors.js';
import { checkOrganizationName } from '../domain/organization-names.js';
import type { Role } from '../domain/roles.js';
import type { OrganizationWithRole } from '../store/organizations.js';
import { requireInteractive, requireRole } from './auth.js';
import { planRenews } from './billing.js';
import type { Membership } from './membership.js';
import type { Caller } from './scope.js';
import type { Stores } from '../store/index.js';
import type { Clock } from './scope.js';

export class Organizations {
  constructor(
    private readonly stores: Pick<Stores, 'db' | 'organizations' | 'devices' | 'instances'>,
    private readonly now: Clock,
    private readonly membership: Pick<Membership, 'revoke'>,
  ) {}

  /**
   * The caller's organizations with their role in each. An API key sees only the organization it is bound to.
   */
  listOrganizations(caller: Caller): OrganizationWithRole[] {
    const all = this.stores.organizations.ofUser(caller.user.id);
    return caller.key ? all.filter((o) => o.id === caller.key!.organizationId) : all;
  }

  /**
   * The caller's membership of an organization named by id in the path. Another organization's id, or one
   * that does not exist, is the same not_found: nobody learns of an organization they are not in. An API key
   * naming another organization its creator belongs to is refused, as with X-Organization-Id.
   */
  membershipOf(caller: Caller, organizationId: string): OrganizationWithRole {
    const org = this.stores.organizations.ofUser(caller.user.id).find((o) => o.id === organizationId);
    if (!org) throw notFound('organization');
    if (caller.key && caller.key.organizationId !== org.id) {
      throw forbidden('wrong_organization', 'This API key is bound to another organization.');
    }
    return org;
  }

  createOrganization(caller: Caller, rawName: string): OrganizationWithRole {
    const { organizations, db } = this.stores;
    const now = this.now();
    const id = randomUUID();
    return db.transaction(() => {
      const name = checkOrganizationName(rawName, organizations.ofUser(caller.user.id).map((o) => o.name));
      organizations.insert({ id, name, personalOf: null, plan: 'hobby', cancelAtPeriodEnd: false, createdAt: now });
      organizations.addMember(id, caller.user.id, 'admin', now);
      return { ...organizations.get(id)!, role: 'admin' as const };
    }).immediate();
  }

  private adminOfShared(caller: Caller, organizationId: string): OrganizationWithRole {
    requireInteractive(caller);
    const org = this.membershipOf(caller, organizationId);
    requireRole(org.role, 'admin');
    if (org.personalOf) throw forbidden('personal_organization', 'The Personal organization cannot be renamed or deleted.');
    return org;
  }

  renameOrganization(caller: Caller, organizationId: string, rawName: string): OrganizationWithRole {
    const { organizations, db } = this.stores;
    return db.transaction(() => {
      const org = this.adminOfShared(caller, organizationId);
      const others = organizations.ofUser(caller.user.id).filter((o) => o.id !== org.id).map((o) => o.name);
      const name = checkOrganizationName(rawName, others);
      organizations.rename(org.id, name);
      return { ...org, name };
    }).immediate();
  }

  deleteOrganization(caller: Caller, organizationId: string): void {
    const { organizations, devices, instances, db } = this.stores;
    db.transaction(() => {
      const org = this.adminOfShared(caller, organizationId);
      if (organizations.memberCount(org.id) > 1) {
        throw conflict('not_sole_member', 'Only an organization whose sole member you are can be deleted.');
      }
      if (planRenews(org)) {
        throw conflict('plan_renews', `The ${org.plan} plan still renews. Set it to cancel at period end first.`);
      }
      if (devices.activeCount(org.id) > 0) {
        throw conflict('device_allocated', 'Release every device allocated in this organization first.');
      }
      // Its instances' VMs would be left running on the lab's Macs, with nothing left to tear them down.
      if (instances.activeCount(org.id) > 0) {
        throw conflict('instance_allocated', 'Release every instance of this organization first.');
      }
      organizations.remove(org.id);
    }).immediate();
  }

  listMembers(caller: Caller, organizationId: string) {
    const org = this.membershipOf(caller, organizationId);
    return this.stores.organizations.members(org.id);
  }

  /** Admin only; nobody changes their own role, so an organization never loses its last admin this way. */
  changeMemberRole(caller: Caller, organizationId: string, userId: string, role: Role) {
    const { organizations, db } = this.stores;
    return db.transaction(() => {
      const org = this.membershipOf(caller, organizationId);
      requireRole(org.role, 'admin');
      if (userId === caller.user.id) throw forbidden('own_role', 'You cannot change your own role.');
      const member = organizations.members(org.id).find((m) => m.userId === userId);
      if (!member) throw notFound('member');
      organizations.setRole(org.id, userId, role);
      return { ...member, role };
    }).immediate();
  }

  /**
   * Admin only. An admin may remove anyone, themselves included (leaving), as long as another admin stays; the owner of
   * a Personal organization stays in it. What the member holds there ends at once (see Membership).
   */
  removeMember(caller: Caller, organizationId: string, userId: string): void {
    const { organizations, db } = this.stores;
    db.transaction(() => {
      const org = this.membershipOf(caller, organizationId);
      requireRole(org.role, 'admin');
      const members = organizations.members(org.id);
      const member = members.find((m) => m.userId === userId);
      if (!member) throw notFound('member');
      if (org.personalOf === userId) throw forbidden('personal_organization', 'The owner of a Personal organization cannot be removed from it.');
      if (member.role === 'admin' && !members.some((m) => m.role === 'admin' && m.userId !== userId)) {
        throw conflict('last_admin', 'An organization keeps at least one admin: make someone else admin first.');
      }
      organizations.removeMember(org.id, userId);
    }).immediate();
    this.membership.revoke(organizationId, userId);
  }
}
