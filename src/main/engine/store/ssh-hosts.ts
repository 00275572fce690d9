import type { RunResult } from 'better-sqlite3';
import type { Db } from './db.js';

/**
 * The statements a table of machines reached over SSH shares (Mac hosts, providers): by name, insert, update of the
 * given fields only, and the trust-on-first-use host key. `columns` selects a row as `Stored`; `settable` maps each
 * settable field to its column.
 */
export function sshHostTable<Stored, Fields extends { address: unknown; port: unknown; hostKeySha256: unknown }>(
  db: Db,
  table: string,
  columns: string,
  settable: Record<keyof Fields & string, string>,
) {
  const all = db.prepare<[], Stored>(`SELECT ${columns} FROM ${table} ORDER BY name COLLATE NOCASE`);
  const byId = db.prepare<[string], Stored>(`SELECT ${columns} FROM ${table} WHERE id = ?`);
  const byName = db.prepare<[string], Stored>(`SELECT ${columns} FROM ${table} WHERE name = ? COLLATE NOCASE`);
  const insert = db.prepare(
    `INSERT INTO ${table} (id, ${Object.values(settable).join(', ')}, created_at, updated_at)
     VALUES (@id, ${Object.keys(settable).map((k) => `@${k}`).join(', ')}, @now, @now)`,
  );
  const pin = db.prepare(`UPDATE ${table} SET host_key_sha256 = ? WHERE id = ? AND host_key_sha256 IS NULL`);
  const remove = db.prepare(`DELETE FROM ${table} WHERE id = ?`);
  return {
    all: (): Stored[] => all.all(),
    get: (id: string): Stored | undefined => byId.get(id),
    byName: (name: string): Stored | undefined => byName.get(name),
    insert: (row: Record<keyof Fields & string, unknown> & { id: string; now: number }) => void insert.run(row),
    /**
     * Changes only the given fields (null included). A new address or port forgets the pinned host key unless one is
     * given: it is another machine.
     */
    update: (id: string, fields: Partial<Record<keyof Fields & string, unknown>>, now: number) => {
      const moved = fields.address !== undefined || fields.port !== undefined;
      if (moved && fields.hostKeySha256 === undefined) fields = { ...fields, hostKeySha256: null };
      const entries = Object.entries(fields).filter(([key, value]) => value !== undefined && key in settable);
      const sets = entries.map(([key]) => `${settable[key as keyof Fields & string]} = @${key}`);
      db.prepare(`UPDATE ${table} SET ${[...sets, 'updated_at = @now'].join(', ')} WHERE id = @id`).run({ ...Object.fromEntries(entries), id, now });
    },
    /** Trust on first use: the first key seen is kept, and a different one later is refused. */
    pinHostKey: (id: string, fingerprint: string) => void pin.run(fingerprint, id),
    remove: (id: string): RunResult => remove.run(id),
  };
}
