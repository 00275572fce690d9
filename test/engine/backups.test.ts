import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, client, startEngine, type Client, type TestEngine } from '../support/engine.js';
import { shellBlocks } from '../docs/doc-blocks.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const mode = (path: string) => statSync(path).mode & 0o777;

/** Every file and folder under a folder, with its mode. */
function modes(dir: string): Array<{ path: string; dir: boolean; mode: number }> {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).map((name) => {
    const info = statSync(join(dir, name));
    return { path: name, dir: info.isDirectory(), mode: info.mode & 0o777 };
  });
}

async function uploadAsset(api: string, token: string, testResultId: string, name: string, data: Buffer) {
  const boundary = 'benchtop-backup-boundary';
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\n${name}\r\n`),
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: text/plain\r\n\r\n`),
    data,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const res = await fetch(`${api}/test-results/${testResultId}/assets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
    body: new Uint8Array(body),
  });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string };
}

/**
 * Backups (issue 33.3): written 0600 in 0700 folders even into a 0755 BENCHTOP_BACKUP_DIR, without the lab's
 * token_secret, and carrying the blobs, so that a standby restored by the documented recipe serves an asset
 * uploaded before the backup.
 */
describe('backups', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'benchtop-backups-'));
  const backupDir = join(scratch, 'shared-disk');
  const standbyDir = join(scratch, 'standby');
  let lab: TestEngine;
  let c: Client;
  let owner: string;
  let standby: TestEngine | undefined;
  const content = Buffer.from('an asset uploaded before the backup\n'.repeat(100));
  let testResultId: string;
  let assetId: string;
  let backup: { dir: string; path: string; bytes: number };

  beforeAll(async () => {
    // An existing folder any local user can read, as another disk's mount point often is.
    mkdirSync(backupDir, { mode: 0o755 });
    chmodSync(backupDir, 0o755);
    lab = await startEngine({ backupDir, backupIntervalSeconds: 0 });
    c = client(lab.api);
    owner = await c.login();
    // A credential in secrets.json, which the recipe copies beside the backup.
    expect((await c.call('PATCH', '/lab/assistant', { token: owner, body: { apiKey: 'sk-backup-test' } })).status).toBe(200);
    testResultId = (await c.call('POST', '/test-results', { token: owner, body: { name: 'before the backup' } })).body.id;
    assetId = (await uploadAsset(lab.api, owner, testResultId, 'report.txt', content)).id;
    const reply = await c.call('POST', '/lab/backup', { token: owner });
    expect(reply.status).toBe(201);
    backup = reply.body;
  }, 60_000);
  afterAll(async () => {
    await standby?.stop();
    await lab?.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('is a 0700 folder of 0600 files inside a 0755 BENCHTOP_BACKUP_DIR', () => {
    expect(backup.dir).toBe(join(backupDir, basename(backup.dir)));
    expect(backup.path).toBe(join(backup.dir, 'benchtop.db'));
    expect(mode(backup.dir)).toBe(0o700);
    const inside = modes(backup.dir);
    expect(inside.filter((e) => !e.dir).map((e) => e.path)).toEqual(expect.arrayContaining(['benchtop.db']));
    // Nothing in the backup is readable by another user: folders 0700, files 0600.
    for (const entry of inside) expect({ path: entry.path, mode: entry.mode }).toEqual({ path: entry.path, mode: entry.dir ? 0o700 : 0o600 });
    // The folder the operator gave is left as it was; what it lists is the backups' names.
    expect(mode(backupDir)).toBe(0o755);
    expect(readdirSync(backupDir)).toEqual([basename(backup.dir)]);
  });

  it('holds no token_secret, anywhere in its bytes', () => {
    const secret = lab.engine.stores.settings.get('token_secret');
    expect(secret).toMatch(/^[A-Za-z0-9+/]{40,}=*$/);
    const copy = new Database(backup.path, { readonly: true });
    try {
      expect(copy.prepare("SELECT value FROM settings WHERE key = 'token_secret'").get()).toBeUndefined();
    } finally {
      copy.close();
    }
    for (const file of readdirSync(backup.dir)) {
      if (statSync(join(backup.dir, file)).isFile()) expect(readFileSync(join(backup.dir, file)).includes(secret!)).toBe(false);
    }
  });

  it('holds the blobs: a standby restored by the documented recipe serves an asset uploaded before the backup', async () => {
    const recipe = shellBlocks(join(ROOT, 'docs/providers.md'), 'docs/providers.md').find((b) => b.mark.kind === 'not run' && b.mark.why.includes('test/engine/backups.test.ts'));
    expect(recipe, 'the standby recipe in docs/providers.md').toBeDefined();
    const lines = recipe!.code.split('\n').filter((l) => l.trim() !== '');
    const serve = lines.pop()!;
    expect(serve).toMatch(/^BENCHTOP_DATA_DIR=\/srv\/benchtop-standby npm run serve$/);
    // The recipe's own lines, run as written; only the places are this test's: the backup the lab answered, its
    // data dir for ~/.benchtop, and a scratch folder for /srv/benchtop-standby.
    const script = lines
      .map((l) => l.replace(/^BACKUP=\S+/, `BACKUP='${backup.dir}'`))
      .join('\n')
      .replaceAll('~/.benchtop', lab.dataDir)
      .replaceAll('/srv/benchtop-standby', standbyDir);
    execFileSync('bash', ['-euo', 'pipefail', '-c', script], { stdio: 'pipe' });

    // `npm run serve` with that data dir: the same engine, started here.
    standby = await startEngine({ dataDir: standbyDir });
    // The hub's tokens are not the standby's: its token_secret is its own.
    expect((await call(standby.api, 'GET', '/me', { token: owner })).status).toBe(401);
    const token = await client(standby.api).login();
    const res = await fetch(`${standby.api}/test-results/${testResultId}/assets/${assetId}`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(content)).toBe(true);
    // The credentials came along.
    expect((await call(standby.api, 'GET', '/lab/assistant', { token })).body.hasApiKey).toBe(true);
  }, 60_000);

  it('an asset whose blob is missing answers 404 asset_content_missing, not 500', async () => {
    const sha: string = (await c.call('GET', `/test-results/${testResultId}/assets`, { token: owner })).body.data[0].sha256;
    const blob = join(lab.dataDir, 'blobs', sha.slice(0, 2), sha);
    unlinkSync(blob);
    const reply = await c.call('GET', `/test-results/${testResultId}/assets/${assetId}`, { token: owner });
    expect(reply.status).toBe(404);
    expect(reply.body.error).toMatchObject({ code: 'asset_content_missing', message: expect.any(String) });
  });
});
