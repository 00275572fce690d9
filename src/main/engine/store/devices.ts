import type { Db } from './db.js';

export interface DeviceAllocationRow {
  id: string;
  sessionId: string;
  organizationId: string;
  status: string;
  platform: string;
  type: string | null;
  name: string;
  osVersion: string;
  serial: string | null;
  releaseReason: string | null;
  createdAt: number;
  releasedAt: number | null;
}

const COLUMNS = `id, session_id AS sessionId, organization_id AS organizationId, status, platform, type, name,
  os_version AS osVersion, serial, release_reason AS releaseReason, created_at AS createdAt, released_at AS releasedAt`;

export function deviceAllocationStore(db: Db) {
  const ofSession = db.prepare<[string], DeviceAllocationRow>(`SELECT ${COLUMNS} FROM device_allocations WHERE session_id = ? ORDER BY created_at DESC`);
  const ofSessions = db.prepare<[string], DeviceAllocationRow>(
    `SELECT ${COLUMNS} FROM device_allocations WHERE session_id IN (SELECT value FROM json_each(?)) ORDER BY created_at DESC`,
  );
  const activeInOrg = db.prepare<[string], { n: number }>(
    'SELECT count(*) AS n FROM device_allocations WHERE organization_id = ? AND released_at IS NULL',
  );
  return {
    /** Allocations of the given sessions, newest first. */
    ofSessions: (sessionIds: readonly string[]) =>
      sessionIds.length === 1 ? ofSession.all(sessionIds[0]!) : ofSessions.all(JSON.stringify(sessionIds)),
    activeCount: (organizationId: string) => activeInOrg.get(organizationId)!.n,
  };
}
