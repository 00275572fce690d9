import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { call } from '../support/engine.js';
import { startServeProcess, type ServeProcess } from '../support/serve-process.js';

describe('BENCHTOP_LOG_LEVEL=info', () => {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-log-'));
  let p: ServeProcess | undefined;
  afterAll(() => {
    p?.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('logs a signed upload URL with its signature redacted, as it does a token', async () => {
    p = await startServeProcess({
      BENCHTOP_DATA_DIR: dir, BENCHTOP_OWNER_EMAIL: 'o@lab.test', BENCHTOP_OWNER_PASSWORD: 'password-1', BENCHTOP_LOG_LEVEL: 'info',
    });
    const token = (await call(p.api, 'POST', '/auth/login', { body: { email: 'o@lab.test', password: 'password-1' } })).body.token;
    const bytes = Buffer.from('not really an apk');
    const created = await call(p.api, 'POST', '/files', {
      token,
      body: { filename: 'app.apk', filesize: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') },
    });
    expect(created.status).toBe(201);
    const url = new URL(created.body.upload.url);
    const signature = url.searchParams.get('signature')!;
    expect(signature.length).toBeGreaterThan(10);
    const put = await fetch(url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: bytes });
    expect(put.status).toBe(200);
    // The access log line is written when the response ends; give the process a moment to print it.
    await new Promise((r) => setTimeout(r, 300));
    expect(p.output()).toContain(`/files/${created.body.id}/content`);
    expect(p.output()).toContain('signature=[redacted]');
    expect(p.output()).not.toContain(signature);
    expect(p.output()).not.toContain(encodeURIComponent(signature));
  });
});
