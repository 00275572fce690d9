import type { Db } from './db.js';
import type { HostAuth } from './mac-hosts.js';

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
const toStored = (fields: Partial<ProviderFields>) =>
  Object.fromEntries(Object.entries(fields).map(([key, value]) => [key, typeof value === 'boolean' ? Number(value) : value]));

/** The lab's providers. */
export function providerStore(db: Db) {
  const all = db.prepare<[], Stored>(`SELECT ${COLUMNS} FROM providers ORDER BY name COLLATE NOCASE`);
  const byId = db.prepare<[string], Stored>(`SELECT ${COLUMNS} FROM providers WHERE id = ?`);
  const byName = db.prepare<[string], Stored>(`SELECT ${COLUMNS} FROM providers WHERE name = ? COLLATE NOCASE`);
  const insert = db.prepare(
    `INSERT INTO providers (id, ${Object.values(SETTABLE).join(', ')}, created_at, updated_at)
     VALUES (@id, ${Object.keys(SETTABLE).map((k) => `@${k}`).join(', ')}, @now, @now)`,
  );
  const pin = db.prepare('UPDATE providers SET host_key_sha256 = ? WHERE id = ? AND host_key_sha256 IS NULL');
  const remove = db.prepare('DELETE FROM providers WHERE id = ?');
  return {
    all: () => all.all().map((row) => fromStored(row)!),
    get: (id: string) => fromStored(byId.get(id)),
    byName: (name: string) => fromStored(byName.get(name)),
    insert: (row: ProviderFields & { id: string; now: number }) => void insert.run({ ...toStored(row), id: row.id, now: row.now }),
    /** Changes only the given fields. A new address or port forgets the pinned host key unless one is given. */
    update: (id: string, fields: Partial<ProviderFields>, now: number) => {
      const moved = fields.address !== undefined || fields.port !== undefined;
      if (moved && fields.hostKeySha256 === undefined) fields = { ...fields, hostKeySha256: null };
      const entries = Object.entries(toStored(fields)).filter(([key, value]) => value !== undefined && key in SETTABLE);
      const sets = entries.map(([key]) => `${SETTABLE[key as keyof ProviderFields]} = @${key}`);
      db.prepare(`UPDATE providers SET ${[...sets, 'updated_at = @now'].join(', ')} WHERE id = @id`).run({ ...Object.fromEntries(entries), id, now });
    },
    /** Trust on first use, as for Mac hosts. */
    pinHostKey: (id: string, fingerprint: string) => void pin.run(fingerprint, id),
    remove: (id: string) => remove.run(id).changes === 1,
  };
}
