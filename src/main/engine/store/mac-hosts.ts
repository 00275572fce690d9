import type { Db } from './db.js';
import type { Version } from './version.js';

export type HostMode = 'tart' | 'bare';
export type HostAuth = 'privateKey' | 'password';
/** default: the password of Tart's published macOS images (admin/admin). */
export type VmAuth = HostAuth | 'default';

/** A Mac host as stored; its credentials live in the secret store, never here. */
export interface MacHostRow {
  id: string;
  name: string;
  address: string;
  port: number;
  username: string;
  auth: HostAuth;
  mode: HostMode;
  baseImage: string;
  maxInstances: number;
  cpuCores: number;
  memoryMb: number;
  diskMb: number;
  vmUsername: string;
  vmPort: number;
  vmAuth: VmAuth;
  workDir: string;
  hostKeySha256: string | null;
  createdAt: number;
  updatedAt: number;
}

export type MacHostFields = Omit<MacHostRow, 'id' | 'createdAt' | 'updatedAt'>;

const COLUMNS = `id, name, address, port, username, auth, mode, base_image AS baseImage, max_instances AS maxInstances,
  cpu_cores AS cpuCores, memory_mb AS memoryMb, disk_mb AS diskMb, vm_username AS vmUsername, vm_port AS vmPort,
  vm_auth AS vmAuth, work_dir AS workDir, host_key_sha256 AS hostKeySha256, created_at AS createdAt, updated_at AS updatedAt`;

const SETTABLE: Record<keyof MacHostFields, string> = {
  name: 'name',
  address: 'address',
  port: 'port',
  username: 'username',
  auth: 'auth',
  mode: 'mode',
  baseImage: 'base_image',
  maxInstances: 'max_instances',
  cpuCores: 'cpu_cores',
  memoryMb: 'memory_mb',
  diskMb: 'disk_mb',
  vmUsername: 'vm_username',
  vmPort: 'vm_port',
  vmAuth: 'vm_auth',
  workDir: 'work_dir',
  hostKeySha256: 'host_key_sha256',
};

/**
 * The lab's Mac hosts. Deleting one sets host_id to null on its instances, which is a write to instances, so it
 * bumps sessionParts like every other instance write.
 */
export function macHostStore(db: Db, sessionParts: Version) {
  const all = db.prepare<[], MacHostRow>(`SELECT ${COLUMNS} FROM mac_hosts ORDER BY name COLLATE NOCASE`);
  const byId = db.prepare<[string], MacHostRow>(`SELECT ${COLUMNS} FROM mac_hosts WHERE id = ?`);
  const byName = db.prepare<[string], MacHostRow>(`SELECT ${COLUMNS} FROM mac_hosts WHERE name = ? COLLATE NOCASE`);
  const insert = db.prepare(
    `INSERT INTO mac_hosts (id, ${Object.values(SETTABLE).join(', ')}, created_at, updated_at)
     VALUES (@id, ${Object.keys(SETTABLE).map((k) => `@${k}`).join(', ')}, @now, @now)`,
  );
  const pin = db.prepare('UPDATE mac_hosts SET host_key_sha256 = ? WHERE id = ? AND host_key_sha256 IS NULL');
  const remove = db.prepare('DELETE FROM mac_hosts WHERE id = ?');

  return {
    all: () => all.all(),
    get: (id: string) => byId.get(id),
    byName: (name: string) => byName.get(name),
    insert: (row: MacHostFields & { id: string; now: number }) => void insert.run(row),
    /**
     * Changes only the given fields (null included). A new address or port forgets the pinned host key unless one is
     * given: it is another machine.
     */
    update: (id: string, fields: Partial<MacHostFields>, now: number) => {
      const moved = fields.address !== undefined || fields.port !== undefined;
      if (moved && fields.hostKeySha256 === undefined) fields = { ...fields, hostKeySha256: null };
      const entries = Object.entries(fields).filter(([key, value]) => value !== undefined && key in SETTABLE);
      const sets = entries.map(([key]) => `${SETTABLE[key as keyof MacHostFields]} = @${key}`);
      db.prepare(`UPDATE mac_hosts SET ${[...sets, 'updated_at = @now'].join(', ')} WHERE id = @id`).run({ ...Object.fromEntries(entries), id, now });
    },
    /** Trust on first use: the first key seen is kept, and a different one later is refused. */
    pinHostKey: (id: string, fingerprint: string) => void pin.run(fingerprint, id),
    remove: (id: string) => sessionParts.bump(remove.run(id)).changes === 1,
  };
}
