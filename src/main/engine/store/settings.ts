import type { Db } from './db.js';

/**
 * Lab-wide settings as a small key/value table. Only the engine writes it, so values are kept in memory after
 * the first read and written through: /me and sign-up read them on every call.
 */
export function settingStore(db: Db) {
  const get = db.prepare<[string], { value: string }>('SELECT value FROM settings WHERE key = ?');
  const set = db.prepare(
    'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
  );
  const cache = new Map<string, string | undefined>();
  return {
    get: (key: string) => {
      if (!cache.has(key)) cache.set(key, get.get(key)?.value);
      return cache.get(key);
    },
    set: (key: string, value: string) => {
      set.run(key, value);
      cache.set(key, value);
    },
  };
}
