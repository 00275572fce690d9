import type { Role } from '../domain/roles.js';
import type { Db } from './db.js';

export type InvitationStatus = 'pending' | 'accepted' | 'rejected' | 'revoked';

export interface InvitationRow {
  id: string;
  organizationId: string;
  organizationName: string;
  email: string;
  role: Role;
  status: InvitationStatus;
  invitedBy: string | null;
  /** The inviter's email, while their account exists. */
  invitedByEmail: string | null;
  createdAt: number;
  expiresAt: number;
  respondedAt: number | null;
}

const SELECT = `SELECT i.id, i.organization_id AS organizationId, o.name AS organizationName, i.email, i.role, i.status,
  i.invited_by AS invitedBy, u.email AS invitedByEmail, i.created_at AS createdAt, i.expires_at AS expiresAt, i.responded_at AS respondedAt
  FROM invitations i JOIN organizations o ON o.id = i.organization_id LEFT JOIN users u ON u.id = i.invited_by`;

export function invitationStore(db: Db) {
  const byId = db.prepare<[string], InvitationRow>(`${SELECT} WHERE i.id = ?`);
  const pendingOfOrg = db.prepare<[string, number], InvitationRow>(
    `${SELECT} WHERE i.organization_id = ? AND i.status = 'pending' AND i.expires_at > ? ORDER BY i.created_at`,
  );
  const pendingForEmail = db.prepare<[string, number], InvitationRow>(
    `${SELECT} WHERE i.email = ? AND i.status = 'pending' AND i.expires_at > ? ORDER BY i.created_at`,
  );
  const pendingForOrgEmail = db.prepare<[string, string, number], InvitationRow>(
    `${SELECT} WHERE i.organization_id = ? AND i.email = ? AND i.status = 'pending' AND i.expires_at > ?`,
  );
  const bySecretHash = db.prepare<[string], InvitationRow>(`${SELECT} WHERE i.secret_hash = ?`);
  const insert = db.prepare(
    `INSERT INTO invitations (id, organization_id, email, role, status, invited_by, created_at, expires_at, secret_hash)
     VALUES (@id, @organizationId, @email, @role, 'pending', @invitedBy, @createdAt, @expiresAt, @secretHash)`,
  );
  const giveSecretHash = db.prepare('UPDATE invitations SET secret_hash = ? WHERE id = ? AND secret_hash IS NULL');
  const respond = db.prepare(`UPDATE invitations SET status = ?, responded_at = ? WHERE id = ? AND status = 'pending'`);
  return {
    get: (id: string) => byId.get(id),
    /** The invitation whose link carries the secret of this hash, in whatever status. */
    getBySecretHash: (secretHash: string) => bySecretHash.get(secretHash),
    pendingOfOrganization: (organizationId: string, now: number) => pendingOfOrg.all(organizationId, now),
    pendingForEmail: (email: string, now: number) => pendingForEmail.all(email, now),
    pendingFor: (organizationId: string, email: string, now: number) => pendingForOrgEmail.get(organizationId, email, now),
    insert: (row: Omit<InvitationRow, 'status' | 'respondedAt' | 'organizationName' | 'invitedByEmail'> & { secretHash: string }) =>
      void insert.run(row),
    /** Records the hash of the link's secret of an invitation made before links carried one. */
    giveSecretHash: (id: string, secretHash: string) => void giveSecretHash.run(secretHash, id),
    /** Moves a pending invitation to its final status; false when it was no longer pending. */
    settle: (id: string, status: Exclude<InvitationStatus, 'pending'>, at: number) => respond.run(status, at, id).changes === 1,
  };
}
