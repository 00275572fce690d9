import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { call } from '../support/engine.js';
import { startServeProcess, type ServeProcess } from '../support/serve-process.js';

const dir = mkdtempSync(join(tmpdir(), 'benchtop-crash-'));
const running: ServeProcess[] = [];
afterAll(() => {
  for (const p of running) p.child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const ENV = { BENCHTOP_DATA_DIR: dir, BENCHTOP_OWNER_EMAIL: 'crash@lab.test', BENCHTOP_OWNER_PASSWORD: 'password-1' };

async function serve() {
  const p = await startServeProcess(ENV);
  running.push(p);
  return p;
}

describe('crash safety', () => {
  it('an engine killed with SIGKILL during writes keeps every acknowledged write, and restarts with no manual step', async () => {
    const first = await serve();
    const login = await call(first.api, 'POST', '/auth/login', { body: { email: 'crash@lab.test', password: 'password-1' } });
    const token: string = login.body.token;

    const sessions: string[] = [];
    const organizations: string[] = [];
    let killed = false;
    // Writers keep going until the kill; a write counts only once its 201 has arrived.
    const writer = async (n: number) => {
      for (let i = 0; !killed; i++) {
        try {
          if (i % 5 === 4) {
            const r = await call(first.api, 'POST', '/organizations', { token, body: { name: `org ${n}-${i}` } });
            if (r.status === 201) organizations.push(r.body.id);
          } else {
            const r = await call(first.api, 'POST', '/sessions', { token });
            if (r.status === 201) sessions.push(r.body.id);
          }
        } catch {
          return; // the connection died with the process
        }
      }
    };
    const writers = Array.from({ length: 8 }, (_, n) => writer(n));
    while (sessions.length < 400) await new Promise((r) => setTimeout(r, 2));
    first.child.kill('SIGKILL');
    killed = true;
    await Promise.all(writers);
    expect((await first.exited).signal).toBe('SIGKILL');
    expect(organizations.length).toBeGreaterThan(0);

    const second = await serve();
    const relogin = await call(second.api, 'POST', '/auth/login', { body: { email: 'crash@lab.test', password: 'password-1' } });
    expect(relogin.status).toBe(200);
    const t2: string = relogin.body.token;
    for (const id of sessions) {
      const r = await call(second.api, 'GET', `/sessions/${id}`, { token: t2 });
      expect(r.status, `session ${id}`).toBe(200);
    }
    const orgs = await call(second.api, 'GET', '/organizations', { token: t2 });
    const ids = new Set(orgs.body.data.map((o: { id: string }) => o.id));
    for (const id of organizations) expect(ids.has(id), `organization ${id}`).toBe(true);

    // and the restarted engine keeps working on the same file
    expect((await call(second.api, 'POST', '/sessions', { token: t2 })).status).toBe(201);
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    const db = new Database(join(dir, 'benchtop.db'), { readonly: true });
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
  });
});
