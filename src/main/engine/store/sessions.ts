import { uniqueCreatedAt } from '../domain/time.js';
import type { Db } from './db.js';

export interface SessionRow {
  id: string;
  organizationId: string;
  createdBy: string | null;
  createdAt: number;
}

const COLUMNS = 'id, organization_id AS organizationId, created_by AS createdBy, created_at AS createdAt';

export function sessionStore(db: Db) {
  const byId = db.prepare<[string, string], SessionRow>(`SELECT ${COLUMNS} FROM sessions WHERE id = ? AND organization_id = ?`);
  const newest = db.prepare<[string], { createdAt: number }>(
    'SELECT created_at AS createdAt FROM sessions WHERE organization_id = ? ORDER BY created_at DESC LIMIT 1',
  );
  const insert = db.prepare('INSERT INTO sessions (id, organization_id, created_by, created_at) VALUES (?, ?, ?, ?)');
  // Keyset paging on the (organization_id, created_at) unique index: no OFFSET, no COUNT.
  const page = db.prepare<[string, number, number, number], SessionRow>(
    `SELECT ${COLUMNS} FROM sessions WHERE organization_id = ? AND created_at < ? AND created_at >= ?
     ORDER BY created_at DESC LIMIT ?`,
  );
  const create = db.transaction((id: string, organizationId: string, createdBy: string | null, now: number): SessionRow => {
    const createdAt = uniqueCreatedAt(now, newest.get(organizationId)?.createdAt);
    insert.run(id, organizationId, createdBy, createdAt);
    return { id, organizationId, createdBy, createdAt };
  });
  return {
    /** The session if it belongs to the organization. */
    get: (id: string, organizationId: string) => byId.get(id, organizationId),
    create: (id: string, organizationId: string, createdBy: string | null, now: number) =>
      create.immediate(id, organizationId, createdBy, now),
    /** Newest first, created strictly before `before` and at or after `since`. */
    page: (organizationId: string, before: number, since: number, limit: number) =>
      page.all(organizationId, before, since, limit),
  };
}
