import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildRenderer } from '../../scripts/build-renderer.mjs';
import { buildServe } from '../../scripts/build-serve.mjs';
import { call } from '../support/engine.js';
import { waitFor } from '../support/lab.js';
import { startServeProcess, type ServeProcess } from '../support/serve-process.js';

describe('demo mode: BENCHTOP_DEMO_IPHONES=N npm run serve', () => {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-demo-ios-'));
  let serve: ServeProcess | undefined;
  // Built first, as bundle.test.ts does: with sources changing, serve's own rebuild would eat its 20 s to start.
  beforeAll(async () => {
    await buildServe();
    await buildRenderer();
  }, 300_000);
  afterAll(() => {
    serve?.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('attaches N simulated iPhones on a simulated usbmuxd, shown in /lab/settings, allocatable, and gone on exit', async () => {
    serve = await startServeProcess({
      BENCHTOP_DATA_DIR: dir,
      BENCHTOP_OWNER_EMAIL: 'demo@lab.test',
      BENCHTOP_OWNER_PASSWORD: 'password-1',
      BENCHTOP_DEMO_IPHONES: '2',
    });
    const m = /Demo: 2 simulated iPhones on usbmuxd (127\.0\.0\.1:\d+)/.exec(serve.output());
    expect(m).not.toBeNull();
    const token = (await call(serve.api, 'POST', '/auth/login', { body: { email: 'demo@lab.test', password: 'password-1' } })).body.token;
    const settings = await call(serve.api, 'GET', '/lab/settings', { token });
    expect(settings.body.usbmuxd).toEqual({ enabled: true, address: m![1] });
    const fleet = await waitFor('two demo iPhones', async () => {
      const r = await call(serve!.api, 'GET', '/fleet/devices', { token });
      return r.body.data.filter((p: { platform: string; state: string }) => p.platform === 'ios' && p.state === 'device').length === 2 ? r.body.data : undefined;
      // The 17.5.1 iPhone's WDA starts through go-ios's tunnel first (seconds on a busy box).
    }, 45_000);
    expect(fleet.map((p: { name: string }) => p.name).sort()).toEqual(['QA iPhone', 'iPhone SE']);

    const session = (await call(serve.api, 'POST', '/sessions', { token })).body.id;
    const a = await call(serve.api, 'POST', `/sessions/${session}/devices`, {
      token,
      body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'ios' }, { attribute: 'version', operator: 'LESS_THAN', value: '17' }] },
    });
    expect(a.status).toBe(201);
    const device = await waitFor('in_use', async () => {
      const d = (await call(serve!.api, 'GET', `/sessions/${session}/devices/${a.body.id}`, { token })).body;
      return d.status === 'in_use' ? d : undefined;
    }, 15_000);
    const tap = await call(serve.api, 'POST', `/sessions/${session}/devices/${device.info.serial}/actions`, { token, body: { type: 'tap', x: 100, y: 100 } });
    expect(tap.status).toBe(200);

    serve.child.kill('SIGTERM');
    expect((await serve.exited).code).toBe(0);
  }, 120_000);
});
