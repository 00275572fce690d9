import type { Db } from './db.js';
import type { Version } from './version.js';

export interface ApiKeyRow {
  id: string;
  organizationId: string;
  createdBy: string;
  name: string;
  suffix: string;
  createdAt: number;
  lastUsedAt: number | null;
}

export interface ApiKeyWithHash extends ApiKeyRow {
  secretHash: string;
}

const COLUMNS = `id, organization_id AS organizationId, created_by AS createdBy, name, suffix,
  created_at AS createdAt, last_used_at AS lastUsedAt`;

export function apiKeyStore(db: Db, authVersion: Version) {
  const byHash = db.prepare<[string], ApiKeyWithHash>(`SELECT ${COLUMNS}, secret_hash AS secretHash FROM api_keys WHERE secret_hash = ?`);
  const ofOrg = db.prepare<[string], ApiKeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE organization_id = ? ORDER BY created_at DESC`);
  const insert = db.prepare(
    `INSERT INTO api_keys (id, organization_id, created_by, name, secret_hash, suffix, created_at)
     VALUES (@id, @organizationId, @createdBy, @name, @secretHash, @suffix, @createdAt)`,
  );
  const remove = db.prepare('DELETE FROM api_keys WHERE id = ? AND organization_id = ?');
  const touch = db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?');
  return {
    getByHash: (secretHash: string) => byHash.get(secretHash),
    ofOrganization: (organizationId: string) => ofOrg.all(organizationId),
    insert: (row: Omit<ApiKeyWithHash, 'lastUsedAt'>) => authVersion.bump(insert.run(row)),
    /** Deletes the key if it belongs to the organization; false otherwise. */
    remove: (id: string, organizationId: string) => authVersion.bump(remove.run(id, organizationId)).changes === 1,
    touch: (id: string, at: number) => void touch.run(at, id),
  };
}
