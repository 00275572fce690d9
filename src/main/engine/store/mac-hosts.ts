import type { Db } from './db.js';
import { sshHostTable } from './ssh-hosts.js';
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
  const table = sshHostTable<MacHostRow, MacHostFields>(db, 'mac_hosts', COLUMNS, SETTABLE);
  return {
    all: table.all,
    get: table.get,
    byName: table.byName,
    insert: (row: MacHostFields & { id: string; now: number }) => table.insert(row),
    update: (id: string, fields: Partial<MacHostFields>, now: number) => table.update(id, fields, now),
    pinHostKey: table.pinHostKey,
    remove: (id: string) => sessionParts.bump(table.remove(id)).changes === 1,
  };
}
