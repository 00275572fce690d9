import type { Db } from './db.js';

/** Lab-wide settings as a small key/value table. */
export function settingStore(db: Db) {
  const get = db.prepare<[string], { value: string }>('SELECT value FROM settings WHERE key = ?');
  const set = db.prepare(
    'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
  );
  return {
    get: (key: string) => get.get(key)?.value,
    set: (key: string, value: string) => void set.run(key, value),
  };
}
