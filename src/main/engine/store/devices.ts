import { uniqueCreatedAt } from '../domain/time.js';
import type { PhoneBaseline } from '../fleet/types.js';
import type { Db } from './db.js';
import type { Version } from './version.js';

export type AllocationStatus = 'queued' | 'provisioning' | 'in_use' | 'offline' | 'released';

export interface DeviceAllocationRow {
  id: string;
  sessionId: string;
  organizationId: string;
  status: AllocationStatus;
  platform: string;
  type: string | null;
  name: string;
  osVersion: string;
  serial: string | null;
  releaseReason: string | null;
  /** The member who released it; null while unreleased, or when the lab released it (releaseReason says why). */
  releasedBy: string | null;
  filters: string;
  packagesBefore: string | null;
  /** JSON: the paths in the phone's holder-writable folders at allocation (Android), until its cleanup finished. */
  filesBefore: string | null;
  /** JSON: what was running at allocation (Android): PhoneBaseline's processes. */
  runningBefore: string | null;
  createdAt: number;
  assignedAt: number | null;
  offlineSince: number | null;
  releasedAt: number | null;
  cleanedAt: number | null;
  /** The member who allocated it (null for allocations made before this was recorded). */
  createdBy: string | null;
  /** Activity as last persisted (coalesced: the idle-release service holds the newest in memory). */
  lastActivityAt: number | null;
  /** When the phone is released if nothing happens; null while idle release is off or the allocation is not in_use. */
  idleDeadlineAt: number | null;
  /** The release the holder is warned of (idle_timeout or reserved), and when it will happen. */
  warningReason: string | null;
  warningReleaseAt: number | null;
}

const COLUMNS = `id, session_id AS sessionId, organization_id AS organizationId, status, platform, type, name,
  os_version AS osVersion, serial, release_reason AS releaseReason, released_by AS releasedBy, filters, packages_before AS packagesBefore,
  files_before AS filesBefore, running_before AS runningBefore,
  created_at AS createdAt, assigned_at AS assignedAt, offline_since AS offlineSince, released_at AS releasedAt,
  cleaned_at AS cleanedAt, created_by AS createdBy, last_activity_at AS lastActivityAt, idle_deadline_at AS idleDeadlineAt,
  warning_reason AS warningReason, warning_release_at AS warningReleaseAt`;

/**
 * Device allocations. Every write bumps sessionParts, because a session's view includes its devices.
 */
export function deviceAllocationStore(db: Db, sessionParts: Version) {
  const byId = db.prepare<[string], DeviceAllocationRow>(`SELECT ${COLUMNS} FROM device_allocations WHERE id = ?`);
  const ofSession = db.prepare<[string], DeviceAllocationRow>(`SELECT ${COLUMNS} FROM device_allocations WHERE session_id = ? ORDER BY created_at DESC`);
  // A phone's allocation in a session: the unreleased one holding it, else the newest named by serial or id.
  const inSession = db.prepare<[string, string, string, string], DeviceAllocationRow>(
    `SELECT ${COLUMNS} FROM device_allocations WHERE session_id = ? AND (serial = ? OR id = ?)
     ORDER BY (serial = ? AND released_at IS NULL) DESC, created_at DESC LIMIT 1`,
  );
  const ofSessions = db.prepare<[string], DeviceAllocationRow>(
    `SELECT ${COLUMNS} FROM device_allocations WHERE session_id IN (SELECT value FROM json_each(?)) ORDER BY created_at DESC`,
  );
  const activeInOrg = db.prepare<[string], { n: number }>(
    'SELECT count(*) AS n FROM device_allocations WHERE organization_id = ? AND released_at IS NULL',
  );
  const active = db.prepare<[], DeviceAllocationRow>(`SELECT ${COLUMNS} FROM device_allocations WHERE released_at IS NULL ORDER BY created_at`);
  const holding = db.prepare<[string], DeviceAllocationRow>(
    `SELECT ${COLUMNS} FROM device_allocations WHERE serial = ? AND released_at IS NULL`,
  );
  const uncleaned = db.prepare<[], DeviceAllocationRow>(
    `SELECT ${COLUMNS} FROM device_allocations WHERE released_at IS NOT NULL AND serial IS NOT NULL AND cleaned_at IS NULL AND packages_before IS NOT NULL`,
  );
  const newest = db.prepare<[string], { createdAt: number }>(
    'SELECT created_at AS createdAt FROM device_allocations WHERE organization_id = ? ORDER BY created_at DESC LIMIT 1',
  );
  const insert = db.prepare(
    `INSERT INTO device_allocations (id, session_id, organization_id, status, platform, name, os_version, filters, created_at, created_by)
     VALUES (@id, @sessionId, @organizationId, 'queued', @platform, @name, @osVersion, @filters, @createdAt, @createdBy)`,
  );
  const assign = db.prepare(
    `UPDATE device_allocations SET status = 'provisioning', serial = @serial, type = @type, name = @name,
     os_version = @osVersion, assigned_at = @at WHERE id = @id AND status = 'queued'`,
  );
  const setStatus = db.prepare('UPDATE device_allocations SET status = ?, offline_since = ? WHERE id = ? AND released_at IS NULL');
  const setBaseline = db.prepare('UPDATE device_allocations SET packages_before = ?, files_before = ?, running_before = ? WHERE id = ?');
  const requeue = db.prepare(
    `UPDATE device_allocations SET status = 'queued', serial = NULL, assigned_at = NULL, offline_since = NULL, packages_before = NULL,
     files_before = NULL, running_before = NULL
     WHERE id = ? AND released_at IS NULL`,
  );
  const release = db.prepare(
    `UPDATE device_allocations SET status = 'released', released_at = ?, release_reason = ?, released_by = ?, offline_since = NULL
     WHERE id = ? AND released_at IS NULL`,
  );
  // A cleaned phone's listing of files is no longer needed, and may be large.
  const cleaned = db.prepare('UPDATE device_allocations SET cleaned_at = ?, files_before = NULL WHERE id = ?');
  const activity = db.prepare('UPDATE device_allocations SET last_activity_at = ?, idle_deadline_at = ? WHERE id = ? AND released_at IS NULL');
  const warn = db.prepare('UPDATE device_allocations SET warning_reason = ?, warning_release_at = ? WHERE id = ? AND released_at IS NULL');

  const write = <T>(result: T) => sessionParts.bump(result);
  return {
    get: (id: string) => byId.get(id),
    /** Allocations of the given sessions, newest first. */
    ofSessions: (sessionIds: readonly string[]) =>
      sessionIds.length === 1 ? ofSession.all(sessionIds[0]!) : ofSessions.all(JSON.stringify(sessionIds)),
    /** A session's device by its serial (the allocation holding it, if any) or by its allocation id. */
    inSession: (sessionId: string, deviceId: string) => inSession.get(sessionId, deviceId, deviceId, deviceId),
    activeCount: (organizationId: string) => activeInOrg.get(organizationId)!.n,
    /** Every allocation not yet released, oldest first: the queue is served in this order. */
    active: () => active.all(),
    /** The allocation holding a phone, if any. */
    holding: (serial: string) => holding.get(serial),
    /** Released allocations whose cleanup never finished (the engine stopped during it). */
    uncleaned: () => uncleaned.all(),
    insert: (row: { id: string; sessionId: string; organizationId: string; platform: string; name: string; osVersion: string; filters: string; createdBy: string; now: number }) =>
      db.transaction(() => {
        const createdAt = uniqueCreatedAt(row.now, newest.get(row.organizationId)?.createdAt);
        write(insert.run({ ...row, createdAt }));
        return createdAt;
      }).immediate(),
    assign: (id: string, phone: { serial: string; type: string; name: string; osVersion: string }, at: number) =>
      write(assign.run({ id, ...phone, at })).changes === 1,
    setStatus: (id: string, status: 'provisioning' | 'in_use' | 'offline', offlineSince: number | null = null) =>
      write(setStatus.run(status, offlineSince, id)).changes === 1,
    setBaseline: (id: string, before: PhoneBaseline) =>
      void setBaseline.run(JSON.stringify(before.packages), before.files ? JSON.stringify(before.files) : null, before.processes ? JSON.stringify(before.processes) : null, id),
    requeue: (id: string) => write(requeue.run(id)).changes === 1,
    release: (id: string, at: number, reason: string | null, by: string | null = null) => write(release.run(at, reason, by, id)).changes === 1,
    markCleaned: (id: string, at: number) => void cleaned.run(at, id),
    /** Persists activity and the idle deadline it gives, for many allocations in one transaction. */
    setActivity: db.transaction((entries: ReadonlyArray<{ id: string; lastActivityAt: number; idleDeadlineAt: number | null }>) => {
      for (const e of entries) write(activity.run(e.lastActivityAt, e.idleDeadlineAt, e.id));
    }),
    setWarning: (id: string, warning: { reason: string; releaseAt: number } | null) =>
      write(warn.run(warning?.reason ?? null, warning?.releaseAt ?? null, id)).changes === 1,
  };
}
