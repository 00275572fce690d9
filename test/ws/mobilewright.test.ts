import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { FleetApiClient, MobileNextDriver, uploadTestResult } from '@mobilewright/driver-mobilenext';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAN_CERTIFICATE_FILE } from '../../src/main/engine/api/lan-server.js';
import { client } from '../support/engine.js';
import { adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';

/**
 * mobilewright's Mobile Next driver (@mobilewright/driver-mobilenext 0.0.57), unchanged, against a real engine with a
 * simulated phone. The driver refuses an API key over plain http, so a user's test reaches Benchtop over LAN sharing's
 * HTTPS, trusting its self-signed certificate with NODE_EXTRA_CA_CERTS; that is what the first test does, in a
 * process of its own because Node reads that variable only at start-up.
 */
const run = adbOrSkip() ? describe : describe.skip;

let lab: TestLab;
let c: ReturnType<typeof client>;
let key: string;
let origin: string;
let lanPort: number;

beforeAll(async () => {
  lab = await startLab([{ model: 'Pixel 8', osVersion: '14', sdk: 34 }], { lanPort: 0 });
  c = client(lab.engine.api);
  const owner = await c.login();
  key = await c.createKey(owner);
  origin = lab.engine.api.replace(/\/api\/v1$/, '');
  const lan = await c.call('PATCH', '/lab/settings', { token: owner, body: { lanSharing: true } });
  expect(lan.body.lanSharing.enabled).toBe(true);
  lanPort = lan.body.lanSharing.port;
}, 60_000);
afterAll(() => lab?.stop());

function session(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const home = mkdtempSync(join(tmpdir(), 'benchtop-mobilewright-'));
  return new Promise((done) => {
    execFile(process.execPath, [resolve('test/support/mobilewright-session.mjs')], { env: { PATH: process.env.PATH ?? '', HOME: home, ...env }, timeout: 90_000 }, (error, stdout, stderr) => {
      rmSync(home, { recursive: true, force: true });
      done({ code: error ? 1 : 0, stdout, stderr });
    });
  });
}

run('the Mobile Next driver', () => {
  it('allocates, connects over wss://, drives the phone and releases it, over LAN sharing\'s HTTPS', async () => {
    const port = lanPort;
    const r = await session({
      NODE_EXTRA_CA_CERTS: join(lab.engine.dataDir, LAN_CERTIFICATE_FILE),
      BENCHTOP_API_URL: `https://127.0.0.1:${port}`,
      BENCHTOP_WS_URL: `wss://127.0.0.1:${port}/ws`,
      BENCHTOP_KEY: key,
    });
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    const serial = lab.serials[0]!;
    expect(out.allocated).toMatchObject({ deviceId: serial, platform: 'android', driver: 'mobilenext', model: 'Pixel 8', osVersion: '14', type: 'real' });
    // Taken on the home screen; the phone has moved on since, so only its form is checked here.
    expect(out.screenshot).toEqual({ bytes: expect.any(Number), signature: 'PNG' });
    expect(out.screenshot.bytes).toBeGreaterThan(1000);
    expect(out.hierarchy).toBeGreaterThan(3);
    expect(out.screenSize).toEqual({ width: 720, height: 1280, scale: 1 });
    expect(out.foreground).toMatchObject({ bundleId: 'com.example.notes' });
    expect(out.apps).toContain('com.example.notes');
    expect(out.devices).toEqual([expect.objectContaining({ id: serial, platform: 'android', state: 'online', model: 'Pixel 8', osVersion: '14' })]);
    expect(out.parallel).toEqual(['portrait', { width: 720, height: 1280, scale: 1 }, expect.objectContaining({ bundleId: 'com.example.notes' }), expect.any(Number)]);
    expect(out.geolocationError).toMatchObject({ name: 'RpcError', code: -32000, message: expect.stringMatching(/mock-location/) });
    expect(out.released).toBe(true);
    const phone = lab.phone(serial).state;
    expect(phone.lastTap).toEqual({ x: 101, y: 202 });
    expect(phone.notesText).toBe('typed by mobilewright');
    await waitFor('the phone to be free again', async () => !(await c.call('GET', '/fleet/devices', { token: key })).body.data[0].held, 15_000);
  }, 90_000);

  it('refuses an API key with a plain-http apiUrl (why the test above uses HTTPS)', () => {
    expect(() => new MobileNextDriver({ apiKey: key, apiUrl: origin })).toThrow(/must use https/);
  });

  it('on loopback without TLS: FleetApiClient with the key, and the driver with the key in the ws:// url as ?token=', async () => {
    const fleet = new FleetApiClient({ apiKey: key, apiUrl: origin });
    const sessionId = await fleet.createSession();
    const allocated = await fleet.allocateDevice(sessionId, [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }]);
    const serial = allocated.info.serial!;
    const driver = new MobileNextDriver({ testResult: { uploadReport: 'off' } });
    await driver.connect({ deviceId: serial, platform: 'android', url: `${origin.replace(/^http/, 'ws')}/ws?token=${key}` });
    expect((await driver.screenshot()).subarray(1, 4).toString()).toBe('PNG');
    await driver.pressButton('HOME');
    await driver.disconnect();
    await fleet.releaseDevice(sessionId, serial);
    expect((await c.call('GET', `/sessions/${sessionId}/devices`, { token: key })).body.data[0].status).toBe('released');
  }, 30_000);

  it('its test-result upload is accepted, with environment as a string', async () => {
    // The uploader has the cloud's address built in; its fetch is pointed at Benchtop instead.
    const fetchFn: typeof fetch = (input, init) => fetch(String(input).replace('https://api.mobilenext.ai', origin), init);
    await uploadTestResult({
      apiKey: key,
      report: { config: {}, suites: [], stats: { expected: 1, unexpected: 0 } },
      userAgent: 'mobilewright/0.0.57',
      name: 'mobilewright run',
      environment: 'ci-linux',
      _fetchFn: fetchFn,
    } as Parameters<typeof uploadTestResult>[0]);
    const results = (await c.call('GET', '/test-results', { token: key })).body.data;
    expect(results).toEqual([expect.objectContaining({ name: 'mobilewright run', environment: 'ci-linux', userAgent: 'mobilewright/0.0.57' })]);
  });
});
