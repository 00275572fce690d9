import { uniqueCreatedAt } from '../domain/time.js';
import type { Db } from './db.js';
import type { Version } from './version.js';

export interface SessionRow {
  id: string;
  organizationId: string;
  createdBy: string | null;
  createdAt: number;
  name: string | null;
  endedAt: number | null;
}

const COLUMNS = 'id, organization_id AS organizationId, created_by AS createdBy, created_at AS createdAt, name, ended_at AS endedAt';

/** `version` is bumped by a rename or an end, so that cached sessions show them. */
export function sessionStore(db: Db, version: Version) {
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
    return { id, organizationId, createdBy, createdAt, name: null, endedAt: null };
  });
  const rename = db.prepare('UPDATE sessions SET name = ? WHERE id = ? AND organization_id = ?');
  // The first end counts: ending again keeps when it ended.
  const end = db.prepare('UPDATE sessions SET ended_at = ? WHERE id = ? AND organization_id = ? AND ended_at IS NULL');
  return {
    /** The session if it belongs to the organization. */
    get: (id: string, organizationId: string) => byId.get(id, organizationId),
    create: (id: string, organizationId: string, createdBy: string | null, now: number) =>
      create.immediate(id, organizationId, createdBy, now),
    /** Newest first, created strictly before `before` and at or after `since`. */
    page: (organizationId: string, before: number, since: number, limit: number) =>
      page.all(organizationId, before, since, limit),
    rename: (id: string, organizationId: string, name: string | null) => version.bump(rename.run(name, id, organizationId).changes > 0),
    end: (id: string, organizationId: string, at: number) => version.bump(end.run(at, id, organizationId).changes > 0),
  };
}
