import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { call } from '../support/engine.js';
import { adbOrSkip, waitFor } from '../support/lab.js';
import { startServeProcess, type ServeProcess } from '../support/serve-process.js';

const hasAdb = adbOrSkip();

describe.skipIf(!hasAdb)('demo mode: BENCHTOP_DEMO_PHONES=N npm run serve', () => {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-demo-'));
  let adb: AdbServer | undefined;
  let serve: ServeProcess | undefined;
  afterAll(async () => {
    serve?.child.kill('SIGKILL');
    await adb?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('attaches N simulated phones through the real adb server, ready to allocate, and detaches them on exit, leaving none behind for the next start', async () => {
    adb = await startAdbServer();
    const env = {
      ...(adb.env as Record<string, string>),
      BENCHTOP_DATA_DIR: dir,
      BENCHTOP_OWNER_EMAIL: 'demo@lab.test',
      BENCHTOP_OWNER_PASSWORD: 'password-1',
      BENCHTOP_ADB: 'on',
      BENCHTOP_ADB_PORT: String(adb.port),
    };
    serve = await startServeProcess({ ...env, BENCHTOP_DEMO_PHONES: '2' });
    expect(serve.output()).toMatch(/Demo: 2 simulated phones attached/);
    const token = (await call(serve.api, 'POST', '/auth/login', { body: { email: 'demo@lab.test', password: 'password-1' } })).body.token;
    const fleet = await waitFor('two demo phones', async () => {
      const r = await call(serve!.api, 'GET', '/fleet/devices', { token });
      return r.body.data.filter((p: { state: string }) => p.state === 'device').length === 2 ? r.body.data : undefined;
    });
    expect(fleet.map((p: { name: string }) => p.name).sort()).toEqual(['Galaxy S23', 'Pixel 8']);

    const session = (await call(serve.api, 'POST', '/sessions', { token })).body.id;
    const a = await call(serve.api, 'POST', `/sessions/${session}/devices`, {
      token,
      body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }, { attribute: 'name', operator: 'STARTS_WITH', value: 'Galaxy' }] },
    });
    expect(a.status).toBe(201);
    await waitFor('in_use', async () => (await call(serve!.api, 'GET', `/sessions/${session}/devices/${a.body.id}`, { token })).body.status === 'in_use');

    serve.child.kill('SIGTERM');
    expect((await serve.exited).code).toBe(0);
    const devices = (await adb.run(['devices'])).stdout.toString();
    expect(devices).not.toMatch(/127\.0\.0\.1:\d+\s+device/);

    // The next start's demo phones are new ones: the last run's are not left in the fleet as gone.
    serve = await startServeProcess({ ...env, BENCHTOP_DEMO_PHONES: '2' });
    const again = (await call(serve.api, 'POST', '/auth/login', { body: { email: 'demo@lab.test', password: 'password-1' } })).body.token;
    await waitFor('the new demo phones', async () =>
      (await call(serve!.api, 'GET', '/fleet/devices', { token: again })).body.data.filter((p: { state: string }) => p.state === 'device').length === 2);
    expect((await call(serve.api, 'GET', '/fleet/devices', { token: again })).body.data).toHaveLength(2);
    serve.child.kill('SIGTERM');
    expect((await serve.exited).code).toBe(0);
  });
});
