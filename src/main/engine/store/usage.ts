import type { UsageInterval } from '../domain/metering.js';
import type { Db } from './db.js';

export type MeteredResource = 'devices' | 'instances';

export interface UsageWindow {
  organizationId: string;
  from: number;
  to: number;
  /** Where a running interval ends for now. */
  now: number;
}

/** A member's (key: user id, label: email) or a phone's (key: serial, label: name) device time, in milliseconds. */
export interface UsageGroup {
  key: string;
  label: string;
  ms: number;
  allocations: number;
}

/** One organization's device time on one phone, in milliseconds: the lab owner's lab-wide report. */
export interface LabUsageRow {
  organizationId: string;
  organization: string;
  serial: string;
  name: string;
  ms: number;
  allocations: number;
}

/** The usage ledger that device and instance assignments write to; billing reads it. */
export function usageStore(db: Db) {
  const open = db.prepare(
    'INSERT INTO usage_ledger (organization_id, resource, subject_id, started_at, serial) VALUES (?, ?, ?, ?, ?)',
  );
  const close = db.prepare('UPDATE usage_ledger SET ended_at = ? WHERE subject_id = ? AND ended_at IS NULL');
  const inPeriod = db.prepare<[string, string, number, number], UsageInterval>(
    `SELECT started_at AS startedAt, ended_at AS endedAt FROM usage_ledger
     WHERE organization_id = ? AND resource = ? AND started_at < ? AND (ended_at IS NULL OR ended_at > ?)`,
  );
  // Each interval clipped to [from, to) (a running one ends at `now`), summed per member who allocated or per phone.
  // The member is the allocation's creator; allocations made before that was recorded fall back to their session's.
  const clipped = `MAX(0, MIN(COALESCE(l.ended_at, @now), @to) - MAX(l.started_at, @from))`;
  const ofOrg = `FROM usage_ledger l JOIN device_allocations d ON d.id = l.subject_id
     WHERE l.organization_id = @organizationId AND l.resource = 'devices' AND l.started_at < @to
       AND (l.ended_at IS NULL OR l.ended_at > @from)`;
  const byMember = db.prepare<[UsageWindow], UsageGroup>(
    `SELECT m.key AS key, COALESCE(u.email, '') AS label, SUM(m.ms) AS ms, COUNT(DISTINCT m.allocation) AS allocations FROM (
       SELECT COALESCE(d.created_by, (SELECT created_by FROM sessions WHERE id = d.session_id), '') AS key,
              ${clipped} AS ms, d.id AS allocation ${ofOrg}
     ) m LEFT JOIN users u ON u.id = m.key GROUP BY m.key ORDER BY ms DESC, key`,
  );
  const byDevice = db.prepare<[UsageWindow], UsageGroup>(
    `SELECT m.key AS key, COALESCE(f.name, '') AS label, SUM(m.ms) AS ms, COUNT(DISTINCT m.allocation) AS allocations FROM (
       SELECT COALESCE(l.serial, d.serial, '') AS key, ${clipped} AS ms, d.id AS allocation ${ofOrg}
     ) m LEFT JOIN fleet_devices f ON f.serial = m.key GROUP BY m.key ORDER BY ms DESC, key`,
  );
  const byOrganizationAndDevice = db.prepare<[Omit<UsageWindow, 'organizationId'>], LabUsageRow>(
    // Every account's Personal organization is called Personal: its owner's email tells them apart.
    `SELECT m.org AS organizationId, COALESCE(o.name || CASE WHEN p.email IS NULL THEN '' ELSE ' (' || p.email || ')' END, '') AS organization,
            m.serial AS serial, COALESCE(f.name, '') AS name,
            SUM(m.ms) AS ms, COUNT(DISTINCT m.allocation) AS allocations FROM (
       SELECT l.organization_id AS org, COALESCE(l.serial, d.serial, '') AS serial, ${clipped} AS ms, d.id AS allocation
       FROM usage_ledger l JOIN device_allocations d ON d.id = l.subject_id
       WHERE l.resource = 'devices' AND l.started_at < @to AND (l.ended_at IS NULL OR l.ended_at > @from)
     ) m LEFT JOIN organizations o ON o.id = m.org LEFT JOIN users p ON p.id = o.personal_of LEFT JOIN fleet_devices f ON f.serial = m.serial
     GROUP BY m.org, m.serial ORDER BY organization, m.org, ms DESC, serial`,
  );
  const openIntervals = db.prepare<[], { id: number; organizationId: string; resource: MeteredResource; subjectId: string; serial: string | null }>(
    `SELECT id, organization_id AS organizationId, resource, subject_id AS subjectId, serial FROM usage_ledger WHERE ended_at IS NULL`,
  );
  const endAt = db.prepare('UPDATE usage_ledger SET ended_at = MAX(started_at, ?) WHERE id = ?');
  /** Ends each open interval at downAt and opens it again at upAt, in one commit: the time between is not metered. */
  const resumeAfterDowntime = db.transaction((downAt: number, upAt: number): number => {
    const rows = openIntervals.all();
    for (const row of rows) {
      endAt.run(downAt, row.id);
      open.run(row.organizationId, row.resource, row.subjectId, upAt, row.serial);
    }
    return rows.length;
  });
  return {
    resumeAfterDowntime: (downAt: number, upAt: number): number => resumeAfterDowntime(downAt, upAt),
    start: (organizationId: string, resource: MeteredResource, subjectId: string, at: number, serial: string | null = null) =>
      void open.run(organizationId, resource, subjectId, at, serial),
    /** Device time held in the window, per member who allocated or per phone: who used what. */
    devicesBy: (groupBy: 'member' | 'device', window: UsageWindow) => (groupBy === 'member' ? byMember : byDevice).all(window),
    /** Every organization's device time on each phone in the window: the lab owner's view of the whole lab. */
    labDevices: (window: Omit<UsageWindow, 'organizationId'>) => byOrganizationAndDevice.all(window),
    stop: (subjectId: string, at: number) => void close.run(at, subjectId),
    intervals: (organizationId: string, resource: MeteredResource, periodStart: number, periodEnd: number) =>
      inPeriod.all(organizationId, resource, periodEnd, periodStart),
  };
}
