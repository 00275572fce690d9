import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../support/engine.js';
import { adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';
import { mobilecli, MOBILECLI, MOBILECLI_0164 } from '../support/mobile-next.js';

/**
 * The deployed mobilecli, unchanged, against a real engine with simulated phones behind a real adb server: 1.0.9's
 * `remote` commands and device commands over /ws, 0.1.64's `fleet` commands, and 1.0.9 driving a simulated phone
 * directly through adb (which needs the phone's shell_v2 and `content`).
 */
const run = adbOrSkip() ? describe : describe.skip;

let lab: TestLab;
let c: ReturnType<typeof client>;
let key: string;
let fleetUrl: string;

beforeAll(async () => {
  lab = await startLab([{ model: 'Pixel 7', osVersion: '14', sdk: 34 }, { model: 'Galaxy A54', osVersion: '13' }]);
  c = client(lab.engine.api);
  key = await c.createKey(await c.login());
  // The engine reads a phone's model and version after adb reports it: both phones are known before a test lists them.
  await waitFor('both phones in the fleet', async () =>
    ((await c.call('GET', '/fleet/devices', { token: key })).body.data as Array<{ state: string; name: string }>)
      .filter((d) => d.state === 'device' && ['Pixel 7', 'Galaxy A54'].includes(d.name)).length === 2, 30_000);
  fleetUrl = `${lab.engine.api.replace(/^http/, 'ws').replace(/\/api\/v1$/, '')}/ws`;
}, 60_000);
afterAll(() => lab?.stop());

run('mobilecli 1.0.9 remote', () => {
  // MOBILECLI_REMOTE_ONLY: the phones are also on this machine's adb; without it mobilecli would drive them locally.
  const cli = () => mobilecli(MOBILECLI, { MOBILECLI_FLEET_URL: fleetUrl, MOBILECLI_TOKEN: key, MOBILECLI_REMOTE_ONLY: '1' });
  let m: ReturnType<typeof cli>;
  let serial = '';
  beforeAll(() => {
    m = cli();
  });
  afterAll(() => m?.close());

  it('remote list-devices: the lab\'s models (fleet.listDevices)', async () => {
    const r = await m.run(['remote', 'list-devices']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.status).toBe('ok');
    expect(r.json.data.devices).toEqual(
      expect.arrayContaining([
        { name: 'Pixel 7', platform: 'android', type: 'real', version: '14', formFactor: 'phone' },
        { name: 'Galaxy A54', platform: 'android', type: 'real', version: '13', formFactor: 'phone' },
      ]),
    );
  });

  it('remote allocate --wait: REST allocation, then devices.list until it is online; REST sees the session', async () => {
    const r = await m.run(['remote', 'allocate', '--platform', 'android', '--name', 'Pixel 7', '--wait', '--timeout', '60']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const data = r.json.data;
    expect(data.state).toBe('online');
    expect(data.device).toMatchObject({ name: 'Pixel 7', platform: 'android', version: '14', state: 'online', provider: { type: 'benchtop', allocationId: data.allocationId } });
    serial = data.device.id;
    expect(lab.serials).toContain(serial);
    const sessions = (await c.call('GET', '/sessions', { token: key })).body.data;
    const held = sessions.flatMap((s: any) => s.devices).find((d: any) => d.allocationId === data.allocationId);
    expect(held).toMatchObject({ status: 'in_use', state: 'online', info: { serial } });
  }, 60_000);

  it('devices: the allocated phone is listed (devices.list)', async () => {
    const r = await m.run(['devices']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.data.devices).toEqual([expect.objectContaining({ id: serial, name: 'Pixel 7', state: 'online' })]);
  });

  it('screenshot: the phone\'s own PNG (device.screenshot)', async () => {
    const file = join(m.home, 'screen.png');
    // The status bar clock is in the picture: a minute may turn while mobilecli runs, so either side of it counts.
    const before = lab.phone(serial).screenshot();
    const r = await m.run(['screenshot', '--device', serial, '--output', file]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(existsSync(file)).toBe(true);
    const after = lab.phone(serial).screenshot();
    const got = readFileSync(file);
    expect(got.equals(before) || got.equals(after), `mobilecli's PNG (${got.length} bytes) is the phone's screen`).toBe(true);
  });

  it('dump ui: the elements on screen (device.dump.ui)', async () => {
    const r = await m.run(['dump', 'ui', '--device', serial]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const elements = r.json.data.elements;
    expect(elements.length).toBeGreaterThan(3);
    expect(elements).toEqual(expect.arrayContaining([expect.objectContaining({ identifier: 'com.android.launcher3:id/launcher', rect: expect.objectContaining({ width: 720 }) })]));
  });

  it('io tap: the phone is tapped there (device.io.tap)', async () => {
    const r = await m.run(['io', 'tap', '--device', serial, '123,456']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(lab.phone(serial).state.lastTap).toEqual({ x: 123, y: 456 });
  });

  it('device info and orientation set/get (device.info, device.io.orientation.*)', async () => {
    const info = await m.run(['device', 'info', '--device', serial]);
    expect(info.code, info.stderr).toBe(0);
    expect(info.json.data.device).toMatchObject({ id: serial, platform: 'android', screenSize: { width: 720, height: 1280, scale: 1 } });
    expect((await m.run(['device', 'orientation', 'set', '--device', serial, 'landscape'])).code).toBe(0);
    expect(lab.phone(serial).state.rotation).toBe(1);
    const got = await m.run(['device', 'orientation', 'get', '--device', serial]);
    expect(got.json.data.orientation).toBe('landscape');
    await m.run(['device', 'orientation', 'set', '--device', serial, 'portrait']);
  });

  it('apps launch, foreground and text (device.apps.*, device.io.text)', async () => {
    expect((await m.run(['apps', 'launch', '--device', serial, 'com.example.notes'])).code).toBe(0);
    const fg = await m.run(['apps', 'foreground', '--device', serial]);
    expect(fg.json.data.packageName).toBe('com.example.notes');
    expect((await m.run(['io', 'text', '--device', serial, 'hello'])).code).toBe(0);
    expect(lab.phone(serial).state.notesText).toBe('hello');
  });

  it('remote release: the allocation is released, and mobilecli no longer lists the phone', async () => {
    const r = await m.run(['remote', 'release', '--device', serial]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const sessions = (await c.call('GET', '/sessions', { token: key })).body.data;
    expect(sessions.flatMap((s: any) => s.devices).find((d: any) => d.info.serial === serial)).toMatchObject({ status: 'released', state: 'released' });
    expect((await m.run(['devices'])).json.data.devices).toEqual([]);
  });

  it('a phone that is not allocated is refused with the fleet\'s error', async () => {
    const r = await m.run(['io', 'tap', '--device', lab.serials[1]!, '1,1']);
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/device not found/i);
  });
});

run('@mobilenext/mobilecli 0.1.64 fleet', () => {
  let m: ReturnType<typeof mobilecli>;
  beforeAll(() => {
    m = mobilecli(MOBILECLI_0164, { MOBILECLI_FLEET_URL: fleetUrl, MOBILECLI_TOKEN: key, MOBILECLI_REMOTE_ONLY: '1' });
  });
  afterAll(() => m?.close());

  it('fleet list-devices, allocate --wait (fleet.allocate, devices.list by sessionId) and release (fleet.release)', async () => {
    const list = await m.run(['fleet', 'list-devices']);
    expect(list.code, list.stderr).toBe(0);
    expect(list.json.data.devices.map((d: any) => d.name).sort()).toEqual(['Galaxy A54', 'Pixel 7']);

    const a = await m.run(['fleet', 'allocate', '--platform', 'android', '--name', 'Galaxy A54', '--wait', '--timeout', '60']);
    expect(a.code, a.stdout + a.stderr).toBe(0);
    expect(a.json.data).toMatchObject({ state: 'online', device: { name: 'Galaxy A54', platform: 'android', state: 'online' } });
    const serial = a.json.data.device.id;
    expect(lab.serials).toContain(serial);
    // The allocation made over /ws lives in a session that REST shows.
    const session = (await c.call('GET', `/sessions/${a.json.data.sessionId}`, { token: key })).body;
    expect(session.devices).toEqual([expect.objectContaining({ status: 'in_use', info: expect.objectContaining({ serial }) })]);

    const r = await m.run(['fleet', 'release', '--device', serial]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect((await c.call('GET', `/sessions/${a.json.data.sessionId}`, { token: key })).body.devices[0].status).toBe('released');
    const again = await m.run(['fleet', 'release', '--device', serial]);
    expect(again.code).not.toBe(0);
    expect(again.json.error).toMatch(/not allocated/);
  }, 60_000);
});

run('mobilecli 1.0.9 on a simulated phone through adb', () => {
  it('sets and reads the orientation: `content insert` on the settings provider, over shell_v2', async () => {
    const serial = lab.serials[1]!;
    const m = mobilecli(MOBILECLI, { ANDROID_ADB_SERVER_PORT: String(lab.adb.port), TMPDIR: lab.adb.env.TMPDIR! });
    try {
      const set = await m.run(['device', 'orientation', 'set', '--device', serial, 'landscape']);
      expect(set.code, set.stdout + set.stderr).toBe(0);
      expect(lab.phone(serial).state.rotation).toBe(1);
      expect(lab.phone(serial).state.recentServices).toContain('shell,v2,raw:content insert --uri content://settings/system --bind name:s:user_rotation --bind value:i:1');
      const get = await m.run(['device', 'orientation', 'get', '--device', serial]);
      expect(get.json.data.orientation).toBe('landscape');
      await m.run(['device', 'orientation', 'set', '--device', serial, 'portrait']);
      expect(lab.phone(serial).state.rotation).toBe(0);
    } finally {
      await m.close();
    }
  }, 60_000);
});
