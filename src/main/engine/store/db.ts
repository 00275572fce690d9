import Database from 'better-sqlite3';
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { MIGRATIONS } from './migrations.js';

export type Db = Database.Database;

export const DB_FILE = 'benchtop.db';

/**
 * Opens (creating if needed) the engine's SQLite file in dataDir and brings its schema up to date.
 *
 * WAL with synchronous=FULL: a commit is on disk before the statement returns, so a kill -9 at any moment
 * loses no acknowledged write, and the next open replays the WAL by itself.
 *
 * `nativeBinding` is the path of a better_sqlite3.node to load instead of the one in node_modules: Electron needs a
 * build for its own ABI, kept apart so that the Node build (tests, npm run serve) is never replaced.
 */
export function openDb(dataDir: string, options: { nativeBinding?: string } = {}): Db {
  if (!existsSync(dataDir)) mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, DB_FILE);
  const db = new Database(path, options.nativeBinding ? { nativeBinding: options.nativeBinding } : {});
  chmodSync(path, 0o600);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return db;
}

export function schemaVersion(db: Db): number {
  return db.pragma('user_version', { simple: true }) as number;
}

function migrate(db: Db): void {
  const current = schemaVersion(db);
  if (current > MIGRATIONS.length) {
    throw new Error(
      `The database schema (version ${current}) is newer than this Benchtop (version ${MIGRATIONS.length}). Upgrade Benchtop.`,
    );
  }
  if (current === MIGRATIONS.length) return;
  // Every pending step and the version bump commit together, so a crash mid-migration leaves the previous version
  // intact. One commit, not one per step: each commit waits for the disk (synchronous=FULL), and a new lab's first
  // start applied every step one commit at a time.
  db.transaction(() => {
    for (let v = current; v < MIGRATIONS.length; v++) db.exec(MIGRATIONS[v]!);
    db.pragma(`user_version = ${MIGRATIONS.length}`);
  })();
}
