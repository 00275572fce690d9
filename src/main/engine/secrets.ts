import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

/**
 * Where the engine keeps credentials it must be able to read back (a Mac host's SSH key or password). Secrets never
 * go into SQLite, a log line or an API response. Async, so that the desktop app can put the OS keychain behind it.
 */
export interface SecretStore {
  /** Where the secrets live: "file" tells the lab owner that no OS keychain (Secret Service) was found. */
  readonly kind: 'keychain' | 'file';
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
}

export const SECRETS_FILE = 'secrets.json';

/**
 * Headless: one JSON object in a 0600 file in the data dir (itself 0700). Every write replaces the file through a
 * rename, so a crash leaves either the old or the new file, never half of one.
 */
export class FileSecretStore implements SecretStore {
  readonly kind = 'file';
  private values: Record<string, string> | undefined;

  constructor(private readonly path: string) {}

  async get(key: string): Promise<string | undefined> {
    return Object.hasOwn(this.read(), key) ? this.read()[key] : undefined;
  }

  async set(key: string, value: string): Promise<void> {
    this.write({ ...this.read(), [key]: value });
  }

  async delete(key: string): Promise<void> {
    if (!Object.hasOwn(this.read(), key)) return;
    const { [key]: _gone, ...rest } = this.read();
    this.write(rest);
  }

  private read(): Record<string, string> {
    if (!this.values) {
      this.values = existsSync(this.path) ? (JSON.parse(readFileSync(this.path, 'utf8')) as Record<string, string>) : {};
    }
    return this.values;
  }

  private write(values: Record<string, string>): void {
    const temp = `${this.path}.tmp`;
    writeFileSync(temp, JSON.stringify(values), { mode: 0o600 });
    // The mode given to writeFileSync is filtered by the umask, and an existing temp file keeps its old mode.
    chmodSync(temp, 0o600);
    renameSync(temp, this.path);
    this.values = values;
  }
}
