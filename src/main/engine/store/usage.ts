import type { UsageInterval } from '../domain/metering.js';
import type { Db } from './db.js';

export type MeteredResource = 'devices' | 'instances';

/** The usage ledger that device and instance assignments write to; billing reads it. */
export function usageStore(db: Db) {
  const open = db.prepare(
    'INSERT INTO usage_ledger (organization_id, resource, subject_id, started_at) VALUES (?, ?, ?, ?)',
  );
  const close = db.prepare('UPDATE usage_ledger SET ended_at = ? WHERE subject_id = ? AND ended_at IS NULL');
  const inPeriod = db.prepare<[string, string, number, number], UsageInterval>(
    `SELECT started_at AS startedAt, ended_at AS endedAt FROM usage_ledger
     WHERE organization_id = ? AND resource = ? AND started_at < ? AND (ended_at IS NULL OR ended_at > ?)`,
  );
  return {
    start: (organizationId: string, resource: MeteredResource, subjectId: string, at: number) =>
      void open.run(organizationId, resource, subjectId, at),
    stop: (subjectId: string, at: number) => void close.run(at, subjectId),
    intervals: (organizationId: string, resource: MeteredResource, periodStart: number, periodEnd: number) =>
      inPeriod.all(organizationId, resource, periodEnd, periodStart),
  };
}
