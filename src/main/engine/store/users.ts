import type { Db } from './db.js';
import type { Version } from './version.js';

export interface UserRow {
  id: string;
  email: string;
  name: string;
  passwordHash: string;
  createdAt: number;
}

const COLUMNS = 'id, email, name, password_hash AS passwordHash, created_at AS createdAt';

export function userStore(db: Db, authVersion: Version) {
  const byId = db.prepare<[string], UserRow>(`SELECT ${COLUMNS} FROM users WHERE id = ?`);
  const byEmail = db.prepare<[string], UserRow>(`SELECT ${COLUMNS} FROM users WHERE email = ?`);
  const insert = db.prepare(
    'INSERT INTO users (id, email, name, password_hash, created_at) VALUES (@id, @email, @name, @passwordHash, @createdAt)',
  );
  const remove = db.prepare('DELETE FROM users WHERE id = ?');
  const first = db.prepare<[], UserRow>(`SELECT ${COLUMNS} FROM users ORDER BY created_at, rowid LIMIT 1`);
  return {
    get: (id: string) => byId.get(id),
    getByEmail: (email: string) => byEmail.get(email),
    insert: (row: UserRow) => authVersion.bump(insert.run(row)),
    remove: (id: string) => authVersion.bump(remove.run(id)),
    first: () => first.get(),
  };
}
