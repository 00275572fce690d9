import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/main/engine/store/migrations.js';
import { call } from '../support/engine.js';
import { waitFor } from '../support/lab.js';
import { startServeProcess, type ServeProcess } from '../support/serve-process.js';

const dirs: string[] = [];
const running: ServeProcess[] = [];
afterEach(() => {
  for (const p of running.splice(0)) p.child.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function dataDir() {
  const d = mkdtempSync(join(tmpdir(), 'benchtop-serve-'));
  dirs.push(d);
  return d;
}

async function serve(env: Record<string, string>) {
  const p = await startServeProcess(env);
  running.push(p);
  return p;
}

describe('npm run serve (src/main/serve.ts)', () => {
  it('creates the lab owner on the first start, printing a generated password once, and it logs in', async () => {
    const dir = dataDir();
    const first = await serve({ BENCHTOP_DATA_DIR: dir, BENCHTOP_OWNER_EMAIL: 'boss@lab.test' });
    const m = /password, shown only this once: (\S+)/.exec(first.output());
    expect(m).not.toBeNull();
    expect((await call(first.api, 'GET', '/health')).status).toBe(200);
    const login = await call(first.api, 'POST', '/auth/login', { body: { email: 'boss@lab.test', password: m![1] } });
    expect(login.status).toBe(200);
    expect(login.body.user.labOwner).toBe(true);
    first.child.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);

    const second = await serve({ BENCHTOP_DATA_DIR: dir, BENCHTOP_OWNER_EMAIL: 'boss@lab.test' });
    expect(second.output()).not.toContain('shown only this once');
    expect((await call(second.api, 'POST', '/auth/login', { body: { email: 'boss@lab.test', password: m![1] } })).status).toBe(200);
  });

  it('uses BENCHTOP_OWNER_PASSWORD when set and prints no password', async () => {
    const p = await serve({ BENCHTOP_DATA_DIR: dataDir(), BENCHTOP_OWNER_EMAIL: 'set@lab.test', BENCHTOP_OWNER_PASSWORD: 'chosen-password' });
    expect(p.output()).not.toContain('chosen-password');
    expect(p.output()).not.toContain('shown only this once');
    expect((await call(p.api, 'POST', '/auth/login', { body: { email: 'set@lab.test', password: 'chosen-password' } })).status).toBe(200);
  });

  it('on a machine with no iPhone plugged in, says once and in plain words that iPhones join when usbmuxd runs', async () => {
    const socket = join(dataDir(), 'usbmuxd');
    const p = await serve({ BENCHTOP_DATA_DIR: dataDir(), BENCHTOP_LOG_LEVEL: 'warn', BENCHTOP_USBMUXD_ADDRESS: `UNIX:${socket}` });
    const said = () => p.output().split('\n').filter((line) => line.includes('usbmuxd'));
    await waitFor('the usbmuxd line', () => said().length > 0);
    // The fleet looks again every 2 s: past one more look, the line is still there once.
    await new Promise((r) => setTimeout(r, 2500));
    expect(said()).toEqual([`[benchtop] iPhones join when usbmuxd runs: it starts when one is plugged in (on Linux, from the usbmuxd package). Watching ${socket}.`]);
    expect(p.output()).not.toMatch(/retrying|error|fail/i);
  });

  it('binds 127.0.0.1 by default', async () => {
    const p = await serve({ BENCHTOP_DATA_DIR: dataDir() });
    expect(p.api).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} finishes in-flight requests and closes the database cleanly`, async () => {
      const dir = dataDir();
      const p = await serve({
        BENCHTOP_DATA_DIR: dir,
        BENCHTOP_OWNER_EMAIL: 'o@lab.test',
        BENCHTOP_OWNER_PASSWORD: 'password-1',
        BENCHTOP_LOG_LEVEL: 'info',
        // scrypt at its real cost (the suite lowers it), so that logins are still in flight when the signal arrives.
        BENCHTOP_TEST_SCRYPT_N: '',
      });
      // Logins hash with scrypt, so some are still in flight when the signal arrives: the server has logged
      // receiving all of them, and has not answered them all.
      const inFlight = Array.from({ length: 6 }, () =>
        call(p.api, 'POST', '/auth/login', { body: { email: 'o@lab.test', password: 'password-1' } }),
      );
      const count = (line: string) => p.output().split(line).length - 1;
      while (count('incoming request') < 6) await new Promise((r) => setTimeout(r, 1));
      expect(count('request completed')).toBeLessThan(6);
      p.child.kill(signal);
      const replies = await Promise.all(inFlight);
      expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
      expect(await p.exited).toEqual({ code: 0, signal: null });
      // A clean close checkpoints the WAL into the main file and removes it.
      expect(existsSync(join(dir, 'benchtop.db-wal'))).toBe(false);
      const db = new Database(join(dir, 'benchtop.db'), { readonly: true });
      expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      db.close();
    });
  }

  it('refuses to listen beyond loopback without TLS, since LAN sharing is HTTPS only', async () => {
    const dir = dataDir();
    await expect(serve({ BENCHTOP_DATA_DIR: dir, BENCHTOP_HOST: '0.0.0.0' })).rejects.toThrow(/LAN sharing is HTTPS only/);
    expect(existsSync(join(dir, 'benchtop.db'))).toBe(false);
  });

  it('serves HTTPS with BENCHTOP_TLS_CERT and BENCHTOP_TLS_KEY', async () => {
    const dir = dataDir();
    const cert = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-days', '1',
      '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert], { stdio: 'ignore' });
    const p = await serve({ BENCHTOP_DATA_DIR: dir, BENCHTOP_TLS_CERT: cert, BENCHTOP_TLS_KEY: key });
    expect(p.api).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
    const body = await new Promise<string>((resolve, reject) => {
      https.get(`${p.api}/health`, { ca: readFileSync(cert) }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve(text));
      }).on('error', reject);
    });
    expect(JSON.parse(body).status).toBe('ok');
  });

  it('refuses to start, with a clear message, on a database newer than itself', async () => {
    const dir = dataDir();
    const p = await serve({ BENCHTOP_DATA_DIR: dir });
    p.child.kill('SIGTERM');
    await p.exited;
    const db = new Database(join(dir, 'benchtop.db'));
    db.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    db.close();
    await expect(serve({ BENCHTOP_DATA_DIR: dir })).rejects.toThrow(/newer than this Benchtop/);
  });
});
