import { chmodSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { chmod, copyFile, link, mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { BlobStore } from '../blobs/blob-store.js';
import { DB_FILE, type Db } from '../store/db.js';
import type { Clock } from './scope.js';

export interface BackupOptions {
  /** Where backups go: a directory of their own. */
  dir: string;
  /** A backup this often (0: only on demand). */
  intervalMs: number;
  /** How many backups are kept; older ones are deleted. */
  keep: number;
  log: (message: string) => void;
}

export interface Backup {
  /** The backup: a folder that is a data dir, its database and the blobs it points at. */
  dir: string;
  /** Its database. */
  path: string;
  /** The database's and the blobs' bytes. */
  bytes: number;
  createdAt: number;
}

/** A backup's name; backups of earlier versions were the database file alone, with `.db` after it. */
const BACKUP_NAME = /^benchtop-[0-9T-]+Z(\.db)?$/;
const PARTIAL_NAME = /^\.benchtop-.*\.partial$/;

/**
 * Online backups of the hub: a consistent snapshot of its SQLite database through SQLite's backup API
 * (better-sqlite3's backup()), taken page by page while the engine keeps writing, and the content-addressed blobs
 * (assets, app files, screenshots) it points at. Each backup is a folder laid out as a data dir (`benchtop.db`,
 * `blobs/`): a standby started on a copy of it serves everything the hub served when it was taken.
 *
 * A backup may sit on a disk other users can read, so its folder is 0700 and its files 0600, and it carries no
 * token_secret: a token signed with the hub's would pass as its owner's. A standby mints its own, and everyone signs in
 * again there (API keys keep working: only their hashes are stored, and they are in the backup).
 */
export class Backups {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<Backup> | undefined;

  constructor(
    private readonly db: Db,
    private readonly blobs: BlobStore,
    private readonly now: Clock,
    private readonly options: BackupOptions,
  ) {}

  start(): void {
    if (this.options.intervalMs <= 0) return;
    this.timer = setInterval(() => {
      this.take().catch((error: Error) => this.options.log(`backup failed: ${error.message}`));
    }, this.options.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }

  /** One backup now; a second call while one runs answers that one. */
  take(): Promise<Backup> {
    this.running ??= this.backup().finally(() => (this.running = undefined));
    return this.running;
  }

  private async backup(): Promise<Backup> {
    const root = this.options.dir;
    // The folder is left as it is when it existed already (it may be a mount others use too): what protects a backup
    // is its own 0700 folder inside it.
    mkdirSync(root, { recursive: true, mode: 0o700 });
    const createdAt = this.now();
    const name = `benchtop-${new Date(createdAt).toISOString().replace(/[:.]/g, '-')}`;
    const existing = readdirSync(root);
    // A backup a crash interrupted is not one.
    for (const partial of existing.filter((f) => PARTIAL_NAME.test(f))) rmSync(join(root, partial), { recursive: true, force: true });
    const previous = existing.filter((f) => BACKUP_NAME.test(f) && !f.endsWith('.db')).sort().at(-1);
    // Built under another name and renamed once complete, so that a backup folder is always a whole one.
    const building = join(root, `.${name}.partial`);
    mkdirSync(building, { mode: 0o700 });
    chmodSync(building, 0o700);
    const blobs = new BlobCopies(this.blobs, join(building, 'blobs'), previous ? join(root, previous, 'blobs') : undefined);
    // The blobs before the snapshot and again after it: a row of the snapshot points at content committed before it
    // (a blob is committed before its row is written), so it is in one pass or the other. A blob removed before
    // the first pass has no row in the snapshot.
    await blobs.copyAll();
    const path = join(building, DB_FILE);
    await this.db.backup(path);
    this.withoutTokenSecret(path);
    chmodSync(path, 0o600);
    await blobs.copyAll();
    const dir = join(root, name);
    renameSync(building, dir);
    this.prune(root);
    return { dir, path: join(dir, DB_FILE), bytes: statSync(join(dir, DB_FILE)).size + blobs.bytes, createdAt };
  }

  /**
   * Deletes the backup's token_secret, through the engine's own connection (the desktop app's better-sqlite3 is
   * built for Electron: a second build could not be loaded there). secure_delete overwrites the deleted row, and
   * the rollback journal stays in memory, so the secret is left nowhere in the backup's files.
   */
  private withoutTokenSecret(path: string): void {
    this.db.prepare('ATTACH DATABASE ? AS backup_copy').run(path);
    try {
      this.db.pragma('backup_copy.journal_mode = MEMORY');
      this.db.pragma('backup_copy.secure_delete = ON');
      this.db.prepare("DELETE FROM backup_copy.settings WHERE key = 'token_secret'").run();
    } finally {
      this.db.exec('DETACH DATABASE backup_copy');
    }
  }

  /** Keeps the newest `keep` backups. Backups of earlier versions count too, and are made 0600 while they last. */
  private prune(root: string): void {
    const backups = readdirSync(root).filter((f) => BACKUP_NAME.test(f)).sort();
    const old = backups.slice(0, Math.max(0, backups.length - this.options.keep));
    for (const name of old) rmSync(join(root, name), { recursive: true, force: true });
    for (const name of backups.slice(old.length)) if (name.endsWith('.db')) chmodSync(join(root, name), 0o600);
  }
}

/**
 * The blob store's files copied into a backup's `blobs/`, laid out as the store lays them out. A blob is
 * hard-linked where it can be (the same disk: no bytes copied, and blobs never change), else linked to the previous
 * backup's copy (a backup disk keeps each blob once however many backups hold it), else copied.
 */
class BlobCopies {
  bytes = 0;
  private readonly done = new Set<string>();

  constructor(
    private readonly store: BlobStore,
    private readonly root: string,
    private readonly previous: string | undefined,
  ) {}

  async copyAll(): Promise<void> {
    for (const { sha256 } of await this.store.list()) {
      if (this.done.has(sha256)) continue;
      const dir = join(this.root, sha256.slice(0, 2));
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const target = join(dir, sha256);
      if (!(await this.place(this.store.pathOf(sha256), target, sha256))) continue;
      await chmod(target, 0o600);
      this.bytes += (await stat(target)).size;
      this.done.add(sha256);
    }
  }

  /** Links or copies one blob; false when it was removed from the store since it was listed (nothing points at it). */
  private async place(source: string, target: string, sha256: string): Promise<boolean> {
    const tries = [source, ...(this.previous ? [join(this.previous, sha256.slice(0, 2), sha256)] : [])];
    for (const from of tries) {
      if (await link(from, target).then(() => true, () => false)) return true;
    }
    try {
      await copyFile(source, target);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw error;
    }
  }
}
