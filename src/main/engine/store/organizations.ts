import type { Role } from '../domain/roles.js';
import type { Db } from './db.js';
import type { Version } from './version.js';

export interface OrganizationRow {
  id: string;
  name: string;
  personalOf: string | null;
  plan: string;
  cancelAtPeriodEnd: boolean;
  createdAt: number;
}

export interface MembershipRow {
  organizationId: string;
  userId: string;
  role: Role;
  createdAt: number;
}

export interface MemberView extends MembershipRow {
  email: string;
  name: string;
}

export interface OrganizationWithRole extends OrganizationRow {
  role: Role;
  /** A Personal organization's owner's email (listed organizations only), so that a joined one can be told apart. */
  personalOfEmail?: string | null;
}

const ORG_COLUMNS =
  'o.id, o.name, o.personal_of AS personalOf, o.plan, o.cancel_at_period_end AS cancelAtPeriodEnd, o.created_at AS createdAt';

type RawOrg = Omit<OrganizationRow, 'cancelAtPeriodEnd'> & { cancelAtPeriodEnd: number };
function toOrg(r: RawOrg & { role: Role }): OrganizationWithRole;
function toOrg(r: RawOrg): OrganizationRow;
function toOrg(r: RawOrg) {
  return { ...r, cancelAtPeriodEnd: r.cancelAtPeriodEnd === 1 };
}

export function organizationStore(db: Db, authVersion: Version) {
  const byId = db.prepare<[string], RawOrg>(`SELECT ${ORG_COLUMNS} FROM organizations o WHERE o.id = ?`);
  const personalOf = db.prepare<[string], RawOrg>(`SELECT ${ORG_COLUMNS} FROM organizations o WHERE o.personal_of = ?`);
  const ofUser = db.prepare<[string], RawOrg & { role: Role; personalOfEmail: string | null }>(
    `SELECT ${ORG_COLUMNS}, m.role, u.email AS personalOfEmail FROM memberships m JOIN organizations o ON o.id = m.organization_id
     LEFT JOIN users u ON u.id = o.personal_of
     WHERE m.user_id = ? ORDER BY o.personal_of IS NULL, o.created_at`,
  );
  const insert = db.prepare(
    `INSERT INTO organizations (id, name, personal_of, plan, cancel_at_period_end, created_at)
     VALUES (@id, @name, @personalOf, @plan, @cancelAtPeriodEnd, @createdAt)`,
  );
  const rename = db.prepare('UPDATE organizations SET name = ? WHERE id = ?');
  const setPlan = db.prepare('UPDATE organizations SET plan = ?, cancel_at_period_end = ? WHERE id = ?');
  const remove = db.prepare('DELETE FROM organizations WHERE id = ?');

  const membership = db.prepare<[string, string], MembershipRow>(
    `SELECT organization_id AS organizationId, user_id AS userId, role, created_at AS createdAt
     FROM memberships WHERE organization_id = ? AND user_id = ?`,
  );
  const members = db.prepare<[string], MemberView>(
    `SELECT m.organization_id AS organizationId, m.user_id AS userId, m.role, m.created_at AS createdAt, u.email, u.name
     FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.organization_id = ? ORDER BY m.created_at, u.email`,
  );
  const memberByEmail = db.prepare<[string, string], { userId: string }>(
    `SELECT m.user_id AS userId FROM memberships m JOIN users u ON u.id = m.user_id
     WHERE m.organization_id = ? AND u.email = ?`,
  );
  const memberCount = db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM memberships WHERE organization_id = ?');
  const addMember = db.prepare(
    'INSERT INTO memberships (organization_id, user_id, role, created_at) VALUES (?, ?, ?, ?)',
  );
  const setRole = db.prepare('UPDATE memberships SET role = ? WHERE organization_id = ? AND user_id = ?');
  const removeMember = db.prepare('DELETE FROM memberships WHERE organization_id = ? AND user_id = ?');
  const otherOrgCount = db.prepare<[string], { n: number }>(
    `SELECT count(*) AS n FROM memberships m JOIN organizations o ON o.id = m.organization_id
     WHERE m.user_id = ? AND o.personal_of IS NULL`,
  );

  return {
    get: (id: string) => {
      const r = byId.get(id);
      return r && toOrg(r);
    },
    personalOf: (userId: string) => {
      const r = personalOf.get(userId);
      return r && toOrg(r);
    },
    /** The user's organizations with their role in each, Personal first. */
    ofUser: (userId: string): OrganizationWithRole[] => ofUser.all(userId).map((r) => toOrg(r)),
    insert: (row: OrganizationRow) => authVersion.bump(insert.run({ ...row, cancelAtPeriodEnd: row.cancelAtPeriodEnd ? 1 : 0 })),
    rename: (id: string, name: string) => authVersion.bump(rename.run(name, id)),
    setPlan: (id: string, plan: string, cancelAtPeriodEnd: boolean) =>
      authVersion.bump(setPlan.run(plan, cancelAtPeriodEnd ? 1 : 0, id)),
    remove: (id: string) => authVersion.bump(remove.run(id)),

    membership: (organizationId: string, userId: string) => membership.get(organizationId, userId),
    members: (organizationId: string) => members.all(organizationId),
    isMemberByEmail: (organizationId: string, email: string) => memberByEmail.get(organizationId, email) !== undefined,
    memberCount: (organizationId: string) => memberCount.get(organizationId)!.n,
    addMember: (organizationId: string, userId: string, role: Role, createdAt: number) =>
      authVersion.bump(addMember.run(organizationId, userId, role, createdAt)),
    setRole: (organizationId: string, userId: string, role: Role) => authVersion.bump(setRole.run(role, organizationId, userId)),
    removeMember: (organizationId: string, userId: string) => authVersion.bump(removeMember.run(organizationId, userId)),
    /** How many organizations other than Personal the user belongs to. */
    nonPersonalCount: (userId: string) => otherOrgCount.get(userId)!.n,
  };
}
