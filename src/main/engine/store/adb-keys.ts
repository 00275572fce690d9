import type { Db } from './db.js';

export interface AdbKeyRow {
  id: string;
  userId: string;
  title: string;
  /** The base64 key blob alone, without adb's user@host comment. */
  publicKey: string;
  fingerprint: string;
  createdAt: number;
}

const COLUMNS = 'id, user_id AS userId, title, public_key AS publicKey, fingerprint, created_at AS createdAt';

export function adbKeyStore(db: Db) {
  const ofUser = db.prepare<[string], AdbKeyRow>(`SELECT ${COLUMNS} FROM adb_keys WHERE user_id = ? ORDER BY created_at DESC`);
  const byFingerprint = db.prepare<[string], AdbKeyRow>(`SELECT ${COLUMNS} FROM adb_keys WHERE fingerprint = ?`);
  const insert = db.prepare(
    `INSERT INTO adb_keys (id, user_id, title, public_key, fingerprint, created_at)
     VALUES (@id, @userId, @title, @publicKey, @fingerprint, @createdAt)`,
  );
  const remove = db.prepare('DELETE FROM adb_keys WHERE id = ? AND user_id = ?');
  return {
    ofUser: (userId: string) => ofUser.all(userId),
    byFingerprint: (fingerprint: string) => byFingerprint.get(fingerprint),
    insert: (row: AdbKeyRow) => void insert.run(row),
    /** Deletes the key if it is the user's; false otherwise. */
    remove: (id: string, userId: string) => remove.run(id, userId).changes === 1,
  };
}
