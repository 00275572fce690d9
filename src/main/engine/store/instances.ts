import { uniqueCreatedAt } from '../domain/time.js';
import type { Db } from './db.js';
import type { Version } from './version.js';

export type InstanceStatus = 'provisioning' | 'ready' | 'released' | 'failed';

export interface InstanceRow {
  id: string;
  sessionId: string;
  organizationId: string;
  status: InstanceStatus;
  os: string;
  image: string;
  arch: string;
  cpuCores: number;
  memoryMb: number;
  diskMb: number;
  createdAt: number;
  readyAt: number | null;
  releasedAt: number | null;
  /** The Mac it runs on; null once that host was removed from the lab. */
  hostId: string | null;
  /** The Tart VM's name on its host (the bare host's instances have one too, for logs). */
  vmName: string | null;
  /** The VM's IP as seen from its host; null on a bare host. */
  address: string | null;
  /** Why it failed, naming the provisioning step. */
  statusMessage: string | null;
  /** Set once its VM is deleted or its work dir cleared: until then it holds a slot on its host. */
  tornDownAt: number | null;
}

const COLUMNS = `id, session_id AS sessionId, organization_id AS organizationId, status, os, image, arch,
  cpu_cores AS cpuCores, memory_mb AS memoryMb, disk_mb AS diskMb, created_at AS createdAt, ready_at AS readyAt,
  released_at AS releasedAt, host_id AS hostId, vm_name AS vmName, address, status_message AS statusMessage,
  torn_down_at AS tornDownAt`;

/**
 * Instances. Every write bumps sessionParts, because a session's view includes its instances.
 */
export function instanceStore(db: Db, sessionParts: Version) {
  const byId = db.prepare<[string], InstanceRow>(`SELECT ${COLUMNS} FROM instances WHERE id = ?`);
  const ofSession = db.prepare<[string], InstanceRow>(`SELECT ${COLUMNS} FROM instances WHERE session_id = ? ORDER BY created_at DESC`);
  const ofSessions = db.prepare<[string], InstanceRow>(
    `SELECT ${COLUMNS} FROM instances WHERE session_id IN (SELECT value FROM json_each(?)) ORDER BY created_at DESC`,
  );
  const activeInOrg = db.prepare<[string], { n: number }>(
    "SELECT count(*) AS n FROM instances WHERE organization_id = ? AND status IN ('provisioning', 'ready')",
  );
  const activeInLab = db.prepare<[], { n: number }>("SELECT count(*) AS n FROM instances WHERE status IN ('provisioning', 'ready')");
  const onHost = db.prepare<[string], InstanceRow>(
    `SELECT ${COLUMNS} FROM instances WHERE host_id = ? AND torn_down_at IS NULL ORDER BY created_at`,
  );
  const hostless = db.prepare<[], { id: string }>('SELECT id FROM instances WHERE host_id IS NULL AND torn_down_at IS NULL');
  const newest = db.prepare<[string], { createdAt: number }>(
    'SELECT created_at AS createdAt FROM instances WHERE organization_id = ? ORDER BY created_at DESC LIMIT 1',
  );
  const insert = db.prepare(
    `INSERT INTO instances (id, session_id, organization_id, status, os, image, arch, cpu_cores, memory_mb, disk_mb,
       created_at, host_id, vm_name)
     VALUES (@id, @sessionId, @organizationId, 'provisioning', @os, @image, @arch, @cpuCores, @memoryMb, @diskMb,
       @createdAt, @hostId, @vmName)`,
  );
  const ready = db.prepare(
    "UPDATE instances SET status = 'ready', ready_at = ?, address = ? WHERE id = ? AND status = 'provisioning'",
  );
  const end = db.prepare(
    `UPDATE instances SET status = @status, released_at = @at, status_message = coalesce(@message, status_message)
     WHERE id = @id AND status IN ('provisioning', 'ready')`,
  );
  const tornDown = db.prepare('UPDATE instances SET torn_down_at = ? WHERE id = ? AND torn_down_at IS NULL');
  const hostlessDown = db.prepare('UPDATE instances SET torn_down_at = ? WHERE host_id IS NULL AND torn_down_at IS NULL');

  const write = <T>(result: T) => sessionParts.bump(result);
  return {
    get: (id: string) => byId.get(id),
    /** Instances of the given sessions, newest first. */
    ofSessions: (sessionIds: readonly string[]) =>
      sessionIds.length === 1 ? ofSession.all(sessionIds[0]!) : ofSessions.all(JSON.stringify(sessionIds)),
    /** provisioning or ready: what the organization's quota counts. */
    activeCount: (organizationId: string) => activeInOrg.get(organizationId)!.n,
    /** provisioning or ready, across every organization: the lab's running instances. */
    activeTotal: () => activeInLab.get()!.n,
    /** Every instance still holding a slot on the host (not yet torn down), oldest first. */
    onHost: (hostId: string) => onHost.all(hostId),
    /**
     * Inserts a provisioning instance and answers its createdAt. Call it inside the transaction that checked the
     * quota and the host's free slot, so that two requests cannot both take the last one.
     */
    insert: (row: { id: string; sessionId: string; organizationId: string; os: string; image: string; arch: string; cpuCores: number; memoryMb: number; diskMb: number; hostId: string; vmName: string; now: number }) => {
      const createdAt = uniqueCreatedAt(row.now, newest.get(row.organizationId)?.createdAt);
      const { now: _now, ...values } = row;
      write(insert.run({ ...values, createdAt }));
      return createdAt;
    },
    markReady: (id: string, at: number, address: string | null) => write(ready.run(at, address, id)).changes === 1,
    /** provisioning or ready to released or failed; releasedAt is billing's end either way. False when already ended. */
    end: (id: string, status: 'released' | 'failed', at: number, message: string | null = null) =>
      write(end.run({ id, status, at, message })).changes === 1,
    markTornDown: (id: string, at: number) => write(tornDown.run(at, id)).changes === 1,
    /** Instances whose host was removed: nothing is left to tear down, so none of them holds anything. */
    settleHostless: (at: number) => (hostless.all().length > 0 ? write(hostlessDown.run(at)).changes : 0),
  };
}
