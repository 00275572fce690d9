import type { Db } from './db.js';

export interface InstanceRow {
  id: string;
  sessionId: string;
  organizationId: string;
  status: string;
  os: string;
  image: string;
  arch: string;
  cpuCores: number;
  memoryMb: number;
  diskMb: number;
  createdAt: number;
  readyAt: number | null;
  releasedAt: number | null;
}

const COLUMNS = `id, session_id AS sessionId, organization_id AS organizationId, status, os, image, arch,
  cpu_cores AS cpuCores, memory_mb AS memoryMb, disk_mb AS diskMb, created_at AS createdAt, ready_at AS readyAt,
  released_at AS releasedAt`;

export function instanceStore(db: Db) {
  const ofSession = db.prepare<[string], InstanceRow>(`SELECT ${COLUMNS} FROM instances WHERE session_id = ? ORDER BY created_at DESC`);
  const ofSessions = db.prepare<[string], InstanceRow>(
    `SELECT ${COLUMNS} FROM instances WHERE session_id IN (SELECT value FROM json_each(?)) ORDER BY created_at DESC`,
  );
  return {
    /** Instances of the given sessions, newest first. */
    ofSessions: (sessionIds: readonly string[]) =>
      sessionIds.length === 1 ? ofSession.all(sessionIds[0]!) : ofSessions.all(JSON.stringify(sessionIds)),
  };
}
