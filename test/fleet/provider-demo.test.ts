import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApk, startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { call } from '../support/engine.js';
import { adbOrSkip, waitFor } from '../support/lab.js';
import { netnsOrSkip, startNetnsProvider, type NetnsProvider } from '../support/provider/index.js';
import { startServeProcess, type ServeProcess } from '../support/serve-process.js';

const ready = adbOrSkip() && netnsOrSkip();

/**
 * Adding a provider in demo mode, as `npm run demo` runs it (the bundle, demo phones and iPhones): an app uploaded
 * first put its APK reader's Bluebird in use, and the provider's second copy of adbkit then failed to load on it (500,
 * and a provider stuck at "unknown" on the Fleet). The owner confirms the host key before it is trusted; an add that
 * is refused leaves nothing behind.
 */
describe.skipIf(!ready)('adding a provider in demo mode', () => {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-provider-demo-'));
  let adb: AdbServer | undefined;
  let serve: ServeProcess | undefined;
  let provider: NetnsProvider | undefined;
  let token: string;
  const api = (method: string, path: string, body?: unknown) => call(serve!.api, method, path, { token, body });
  const listed = async () => ((await api('GET', '/lab/providers')).body.data as Array<{ name: string }>).map((p) => p.name);

  beforeAll(async () => {
    [adb, provider] = await Promise.all([startAdbServer(), startNetnsProvider(0, { phones: [{ port: 23001, options: { model: 'Remote Pixel' } }] })]);
    serve = await startServeProcess({
      ...(adb.env as Record<string, string>),
      BENCHTOP_DATA_DIR: dir,
      BENCHTOP_OWNER_EMAIL: 'demo@lab.test',
      BENCHTOP_OWNER_PASSWORD: 'password-1',
      BENCHTOP_ADB: 'on',
      BENCHTOP_ADB_PORT: String(adb.port),
      BENCHTOP_DEMO_PHONES: '1',
      BENCHTOP_DEMO_IPHONES: '1',
    });
    token = (await call(serve.api, 'POST', '/auth/login', { body: { email: 'demo@lab.test', password: 'password-1' } })).body.token;
  }, 90_000);
  afterAll(async () => {
    serve?.child.kill('SIGKILL');
    await Promise.all([adb?.stop(), provider?.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses an unreachable box and a host key other than the confirmed one, leaving nothing; adds it once confirmed', async () => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(buildApk({ packageName: 'com.example.demo', label: 'Demo' }))]), 'demo.apk');
    const upload = await fetch(`${serve!.api}/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
    expect(upload.status).toBe(201);
    await waitFor('the app read', async () => (await api('GET', '/apps')).body.data.length > 0);

    const unreachable = await api('POST', '/lab/providers', provider!.body({ name: 'no-sshd', port: 2299 }));
    expect(unreachable.status).toBe(400);
    expect(unreachable.body.error).toMatchObject({ code: 'provider_unreachable', message: expect.stringMatching(/No sshd answered at .*:2299/) });
    expect((await api('POST', '/lab/providers/host-key', { address: provider!.address, port: 2299 })).body.error.code).toBe('provider_unreachable');

    const read = await api('POST', '/lab/providers/host-key', { address: provider!.address });
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ address: provider!.address, port: 22, hostKeySha256: expect.stringMatching(/^SHA256:[A-Za-z0-9+/]{43}$/) });
    const wrong = await api('POST', '/lab/providers', provider!.body({ hostKeySha256: `SHA256:${'A'.repeat(43)}` }));
    expect(wrong.status).toBe(409);
    expect(wrong.body.error).toMatchObject({ code: 'host_key_mismatch', message: expect.stringContaining(read.body.hostKeySha256) });
    expect(await listed()).toEqual([]);
    expect((await api('GET', '/fleet/devices')).body.data.filter((p: { host: string | null }) => p.host !== null)).toEqual([]);

    const added = await api('POST', '/lab/providers', provider!.body({ hostKeySha256: read.body.hostKeySha256 }));
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    expect(added.body).toMatchObject({ health: 'up', hostKeySha256: read.body.hostKeySha256 });
    expect(await listed()).toEqual(['provider-0']);
    await waitFor('the provider\'s phone on the fleet', async () =>
      (await api('GET', '/fleet/devices')).body.data.some((p: { name: string; host: string }) => p.name === 'Remote Pixel' && p.host === 'provider-0'));
    expect(serve!.output()).not.toMatch(/cancellation/);
  });
});
