import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Db } from '../store/db.js';
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
  path: string;
  bytes: number;
  createdAt: number;
}

/**
 * Online backups of the hub's SQLite database with SQLite's backup API (better-sqlite3's backup()), which copies
 * a consistent snapshot page by page while the engine keeps writing. Each file is a complete database: a standby
 * started with it as its data dir's benchtop.db picks up where the backup was taken.
 */
export class Backups {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<Backup> | undefined;

  constructor(
    private readonly db: Db,
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
    mkdirSync(this.options.dir, { recursive: true, mode: 0o700 });
    const createdAt = this.now();
    const path = join(this.options.dir, `benchtop-${new Date(createdAt).toISOString().replace(/[:.]/g, '-')}.db`);
    await this.db.backup(path);
    const bytes = statSync(path).size;
    const old = readdirSync(this.options.dir).filter((f) => /^benchtop-.*\.db$/.test(f)).sort();
    for (const file of old.slice(0, Math.max(0, old.length - this.options.keep))) rmSync(join(this.options.dir, file), { force: true });
    return { path, bytes, createdAt };
  }
}
