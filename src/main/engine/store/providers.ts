import type { Db } from './db.js';
import type { HostAuth } from './mac-hosts.js';
import { sshHostTable } from './ssh-hosts.js';

/** A provider as stored; its credentials live in the secret store, never here. */
export interface ProviderRow {
  id: string;
  name: string;
  address: string;
  port: number;
  username: string;
  auth: HostAuth;
  hostKeySha256: string | null;
  adbPort: number;
  usbmuxdSocket: string;
  paused: boolean;
  createdAt: number;
  updatedAt: number;
}

export type ProviderFields = Omit<ProviderRow, 'id' | 'createdAt' | 'updatedAt'>;

const COLUMNS = `id, name, address, port, username, auth, host_key_sha256 AS hostKeySha256, adb_port AS adbPort,
  usbmuxd_socket AS usbmuxdSocket, paused, created_at AS createdAt, updated_at AS updatedAt`;

const SETTABLE: Record<keyof ProviderFields, string> = {
  name: 'name',
  address: 'address',
  port: 'port',
  username: 'username',
  auth: 'auth',
  hostKeySha256: 'host_key_sha256',
  adbPort: 'adb_port',
  usbmuxdSocket: 'usbmuxd_socket',
  paused: 'paused',
};

type Stored = Omit<ProviderRow, 'paused'> & { paused: number };
const fromStored = (row: Stored | undefined): ProviderRow | undefined => (row ? { ...row, paused: row.paused === 1 } : undefined);
const toStored = (fields: Partial<ProviderFields>): Partial<Record<keyof ProviderFields, unknown>> =>
  Object.fromEntries(Object.entries(fields).map(([key, value]) => [key, typeof value === 'boolean' ? Number(value) : value]));

/** The lab's providers. */
export function providerStore(db: Db) {
  const table = sshHostTable<Stored, ProviderFields>(db, 'providers', COLUMNS, SETTABLE);
  return {
    all: () => table.all().map((row) => fromStored(row)!),
    get: (id: string) => fromStored(table.get(id)),
    byName: (name: string) => fromStored(table.byName(name)),
    insert: (row: ProviderFields & { id: string; now: number }) => table.insert({ ...row, ...toStored(row) }),
    /** Changes only the given fields. A new address or port forgets the pinned host key unless one is given. */
    update: (id: string, fields: Partial<ProviderFields>, now: number) => table.update(id, toStored(fields), now),
    /** Trust on first use, as for Mac hosts. */
    pinHostKey: table.pinHostKey,
    remove: (id: string) => table.remove(id).changes === 1,
  };
}
