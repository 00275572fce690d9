import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApk } from '../../src/sim/android/index.js';
import { client, errorCode } from '../support/engine.js';
import { adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const hasAdb = adbOrSkip();

describe.skipIf(!hasAdb)('Android fleet and device allocation (real adb, simulated phones)', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;

  beforeAll(async () => {
    lab = await startLab(
      [
        { model: 'Pixel 8', osVersion: '14', battery: 91 },
        { model: 'Pixel 6', osVersion: '13', battery: 40 },
      ],
      { deviceGraceSeconds: 2, deviceConcurrencyQuota: 3 },
    );
    c = client(lab.engine.api);
    owner = await c.login();
  }, 60_000);
  afterAll(() => lab?.stop());

  const android = (...more: Array<[string, string, string]>) => ({
    filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }, ...more.map(([attribute, operator, value]) => ({ attribute, operator, value }))],
  });
  const newSession = async (token = owner) => (await c.call('POST', '/sessions', { token })).body.id as string;
  const devicesOf = async (session: string, token = owner) => (await c.call('GET', `/sessions/${session}/devices`, { token })).body.data;
  const untilStatus = (session: string, allocationId: string, status: string, token = owner, timeoutMs = 10_000) =>
    waitFor(`${allocationId} to be ${status}`, async () => {
      const d = (await devicesOf(session, token)).find((x: { id: string }) => x.id === allocationId);
      return d?.status === status ? d : undefined;
    }, timeoutMs);
  const release = (session: string, deviceId: string, token = owner) =>
    c.call('POST', `/sessions/${session}/devices/${deviceId}/release`, { token });
  const freeAgain = (serial: string) =>
    waitFor(`${serial} to be free`, async () => {
      const fleet = (await c.call('GET', '/fleet/devices', { token: owner })).body.data;
      return fleet.find((p: { serial: string; held: boolean }) => p.serial === serial && !p.held);
    });

  it('lists the attached phones in the fleet with model, version, battery and state', async () => {
    const fleet = await waitFor('both phones in the fleet', async () => {
      const r = await c.call('GET', '/fleet/devices', { token: owner });
      return r.body.data.length === 2 ? r.body.data : undefined;
    });
    expect(fleet.map((p: { name: string }) => p.name).sort()).toEqual(['Pixel 6', 'Pixel 8']);
    const p8 = fleet.find((p: { name: string }) => p.name === 'Pixel 8');
    expect(p8).toMatchObject({ platform: 'android', osVersion: '14', battery: 91, state: 'device', held: false, serial: lab.serials[0] });
  });

  it('shows a phone plugged in later within 2 s, without polling adb devices', async () => {
    const started = Date.now();
    const serial = await lab.plug({ model: 'Galaxy S23', osVersion: '14' });
    await waitFor('the new phone', async () =>
      (await c.call('GET', '/fleet/devices', { token: owner })).body.data.find((p: { serial: string; state: string }) => p.serial === serial && p.state === 'device'), 2000);
    expect(Date.now() - started).toBeLessThan(4000);
    await lab.unplug(serial);
    await waitFor('the phone to be gone', async () =>
      (await c.call('GET', '/fleet/devices', { token: owner })).body.data.find((p: { serial: string; state: string }) => p.serial === serial && p.state === 'gone'), 2000);
  });

  it('names a phone as its maker sells it where the build says so, and a cloud catalog\'s name finds it', async () => {
    // A Redmi Note 12's ro.product.model is a code; MIUI keeps the name in ro.product.marketname.
    const serial = await lab.plug({ model: '23021RAAEG', manufacturer: 'Xiaomi', brand: 'Redmi', osVersion: '13', properties: { 'ro.product.marketname': 'Redmi Note 12' } });
    const phone = await waitFor('the Redmi in the fleet', async () =>
      (await c.call('GET', '/fleet/devices', { token: owner })).body.data.find((p: { serial: string; state: string }) => p.serial === serial && p.state === 'device'));
    expect(phone).toMatchObject({ name: 'Redmi Note 12', model: '23021RAAEG' });
    // As BrowserStack's catalog writes it (maker first), and by the code the phone itself reports.
    for (const deviceName of ['Xiaomi Redmi Note 12', '23021RAAEG']) {
      const session = await newSession();
      const r = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: android(['deviceName', 'EQUALS', deviceName]) });
      expect(r.status, deviceName).toBe(201);
      const d = await untilStatus(session, r.body.id, 'in_use');
      expect(d.info).toMatchObject({ name: 'Redmi Note 12', serial });
      await release(session, serial);
      await freeAgain(serial);
    }
    await lab.unplug(serial);
  });

  it('allocates through HTTP: provisioning without a serial, then in_use with info.serial on a woken, unlocked, home screen', async () => {
    const session = await newSession();
    const r = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: android(['name', 'EQUALS', 'Pixel 8']) });
    expect(r.status).toBe(201);
    expect(r.body.allocationId).toBe(r.body.id);
    expect(['provisioning', 'in_use']).toContain(r.body.status);
    if (r.body.status === 'provisioning') expect(r.body.info.serial).toBeUndefined();
    const d = await untilStatus(session, r.body.id, 'in_use');
    expect(d.info).toMatchObject({ platform: 'android', type: 'real', name: 'Pixel 8', osVersion: '14', serial: lab.serials[0] });
    const state = lab.phone(lab.serials[0]!).state;
    expect(state).toMatchObject({ awake: true, locked: false, screen: 'home' });
    const byId = await c.call('GET', `/sessions/${session}/devices/${lab.serials[0]}`, { token: owner });
    expect(byId.body.id).toBe(r.body.id);
    const sessionView = await c.call('GET', `/sessions/${session}`, { token: owner });
    expect(sessionView.body.devices[0]).toMatchObject({ status: 'in_use', info: { serial: lab.serials[0] } });
    const held = (await c.call('GET', '/fleet/devices', { token: owner })).body.data.find((p: { serial: string }) => p.serial === lab.serials[0]);
    expect(held).toMatchObject({ held: true, heldBy: { sessionId: session, allocationId: r.body.id } });
    expect((await release(session, lab.serials[0]!)).status).toBe(202);
    await freeAgain(lab.serials[0]!);
  });

  it('queues when every match is busy and serves first-in, first-out (2 phones, 3 allocations)', async () => {
    const s1 = await newSession();
    const s2 = await newSession();
    const s3 = await newSession();
    const a1 = (await c.call('POST', `/sessions/${s1}/devices`, { token: owner, body: android() })).body;
    const a2 = (await c.call('POST', `/sessions/${s2}/devices`, { token: owner, body: android() })).body;
    const a3 = (await c.call('POST', `/sessions/${s3}/devices`, { token: owner, body: android() })).body;
    expect(a3.status).toBe('queued');
    expect(a3.info.serial).toBeUndefined();
    const d1 = await untilStatus(s1, a1.id, 'in_use');
    await untilStatus(s2, a2.id, 'in_use');
    expect((await devicesOf(s3))[0].status).toBe('queued');
    const r = await release(s1, d1.info.serial);
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ id: a1.id, status: 'released' });
    expect(r.body.releasedAt).not.toBeNull();
    const d3 = await untilStatus(s3, a3.id, 'in_use');
    expect(d3.info.serial).toBe(d1.info.serial);
    // release is idempotent
    const again = await release(s1, d1.info.serial);
    expect(again.status).toBe(202);
    expect(again.body.releasedAt).toBe(r.body.releasedAt);
    const d2 = (await devicesOf(s2))[0];
    await release(s2, d2.info.serial);
    await release(s3, d3.info.serial);
    await freeAgain(d1.info.serial);
    await freeAgain(d2.info.serial);
  });

  it('409 concurrency_limit past the organization\'s quota, counting queued allocations', async () => {
    const session = await newSession();
    const made = [];
    for (let i = 0; i < 3; i++) made.push((await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: android() })).body);
    const r = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: android() });
    expect(r.status).toBe(409);
    expect(errorCode(r)).toBe('concurrency_limit');
    for (const a of made) {
      const d = a.status === 'queued' ? a : await untilStatus(session, a.id, 'in_use');
      await release(session, d.info.serial ?? d.id);
    }
    for (const serial of lab.serials.slice(0, 2)) await freeAgain(serial);
  });

  it('404 no_matching_device when nothing in the lab could ever match, and 404 for an unknown session', async () => {
    const session = await newSession();
    for (const body of [
      { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'ios' }] },
      android(['name', 'CONTAINS', 'Nokia']),
      android(['version', 'GREATER_THAN_OR_EQUALS', '15']),
      android(['deviceName', 'EQUALS', 'Motorola Moto.*']),
    ]) {
      const r = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body });
      expect(r.status).toBe(404);
      expect(errorCode(r)).toBe('no_matching_device');
    }
    const unknown = await c.call('POST', '/sessions/6f1c1a52-52a8-4a8e-9a55-1b5f3c9f0000/devices', { token: owner, body: android() });
    expect(errorCode(unknown)).toBe('session_not_found');
    const file = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: { ...android(), installApps: ['file:6f1c1a52-52a8-4a8e-9a55-1b5f3c9f0000'] } });
    expect(file.status).toBe(404);
    expect(errorCode(file)).toBe('file_not_found');
  });

  it('the lab owner\'s note tells identical phones apart: kept across an unplug, shown to every organization, removed by null', async () => {
    const serial = lab.serials[1]!;
    const note = (s: string) => c.call('PATCH', `/fleet/devices/${encodeURIComponent(s)}`, { token: owner, body: { note: '  shelf B, SIM for SMS  ' } });
    const r = await note(serial);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ serial, name: 'Pixel 6', note: 'shelf B, SIM for SMS' });
    await lab.unplug(serial);
    await lab.replug(serial);
    await freeAgain(serial);
    const other = await c.signup('note-reader@fleet.test');
    const seen = (await c.call('GET', '/fleet/devices', { token: other.token })).body.data.find((d: { serial: string }) => d.serial === serial);
    expect(seen).toMatchObject({ name: 'Pixel 6', note: 'shelf B, SIM for SMS' });
    // Everyone else may read it, not write it.
    const refused = await c.call('PATCH', `/fleet/devices/${encodeURIComponent(serial)}`, { token: other.token, body: { note: 'mine' } });
    expect(refused.status).toBe(403);
    expect(errorCode(refused)).toBe('not_lab_owner');
    for (const body of [{ note: 'x'.repeat(201) }, { note: 7 }, {}, { note: 'a', name: 'renamed' }]) {
      const bad = await c.call('PATCH', `/fleet/devices/${encodeURIComponent(serial)}`, { token: owner, body });
      expect(bad.status, JSON.stringify(body)).toBe(400);
    }
    const unknown = await note('no-such-phone');
    expect(unknown.status).toBe(404);
    expect(errorCode(unknown)).toBe('device_not_found');
    const cleared = await c.call('PATCH', `/fleet/devices/${encodeURIComponent(serial)}`, { token: owner, body: { note: null } });
    expect(cleared.status).toBe(200);
    expect(cleared.body.note).toBeUndefined();
  });

  it('400 for every filter violation', async () => {
    const session = await newSession();
    const bodies: unknown[] = [
      {},
      { filters: [] },
      { filters: 'android' },
      { filters: [{ attribute: 'name', operator: 'EQUALS', value: 'Pixel 8' }] },
      android(['color', 'EQUALS', 'red']),
      { filters: [{ attribute: 'platform', operator: 'CONTAINS', value: 'android' }] },
      { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'windows' }] },
      android(['type', 'EQUALS', 'emulator']),
      android(['type', 'CONTAINS', 'real']),
      android(['name', 'GREATER_THAN', 'A']),
      android(['deviceName', 'CONTAINS', 'Pixel']),
      android(['name', 'EQUALS', '']),
      android(['version', 'CONTAINS', '14']),
      android(['version', 'EQUALS', 'fourteen']),
      { filters: [{ attribute: 'platform', operator: 'EQUALS' }] },
      { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 1 }] },
      { ...android(), extra: true },
      { ...android(), installApps: ['apk:1'] },
    ];
    for (const body of bodies) {
      const r = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      errorCode(r);
    }
    expect(await devicesOf(session)).toEqual([]);
  });

  it('cleanup after release uninstalls the apps installed during the allocation, goes home and resets rotation', async () => {
    const session = await newSession();
    const a = (await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: android(['name', 'EQUALS', 'Pixel 6']) })).body;
    const d = await untilStatus(session, a.id, 'in_use');
    const serial = d.info.serial as string;
    const dir = mkdtempSync(join(tmpdir(), 'benchtop-apk-'));
    const apk = join(dir, 'app.apk');
    writeFileSync(apk, buildApk({ packageName: 'com.example.added', label: 'Added' }));
    const install = await lab.adb.run(['-s', serial, 'install', apk], { timeoutMs: 30_000 });
    expect(install.stdout.toString()).toContain('Success');
    const phone = lab.phone(serial);
    expect(phone.state.packages).toContain('com.example.added');
    await c.call('POST', `/sessions/${session}/devices/${serial}/actions`, { token: owner, body: { type: 'setOrientation', orientation: 'landscape' } });
    await c.call('POST', `/sessions/${session}/devices/${serial}/actions`, { token: owner, body: { type: 'launchApp', packageName: 'com.example.notes' } });
    expect(phone.state.rotation).toBe(1);
    await release(session, serial);
    await freeAgain(serial);
    expect(phone.state.packages).not.toContain('com.example.added');
    expect(phone.state.packages).toContain('com.android.settings');
    expect(phone.state).toMatchObject({ screen: 'home', rotation: 0 });
  });

  it('an unplugged phone is offline, in_use again if it comes back within the grace period, and device_lost after it', async () => {
    const session = await newSession();
    const a = (await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: android(['name', 'EQUALS', 'Pixel 8']) })).body;
    const d = await untilStatus(session, a.id, 'in_use');
    const serial = d.info.serial as string;
    await lab.unplug(serial);
    await untilStatus(session, a.id, 'offline', owner, 3000);
    await lab.replug(serial);
    await untilStatus(session, a.id, 'in_use', owner, 3000);
    await new Promise((r) => setTimeout(r, 2500)); // past the grace period: the earlier timer must not fire
    expect((await devicesOf(session))[0].status).toBe('in_use');

    await lab.unplug(serial);
    await untilStatus(session, a.id, 'offline', owner, 3000);
    const lost = await untilStatus(session, a.id, 'released', owner, 6000);
    expect(lost.releaseReason).toBe('device_lost');
    expect(lost.releasedAt).not.toBeNull();
    await lab.replug(serial);
    await freeAgain(serial);
  });

  it('another organization gets 404 for your session\'s devices, and never learns who holds a phone', async () => {
    const session = await newSession();
    const a = (await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: android(['name', 'EQUALS', 'Pixel 8']) })).body;
    const d = await untilStatus(session, a.id, 'in_use');
    const other = await c.signup('other@fleet.test');
    for (const [method, path] of [
      ['GET', `/sessions/${session}/devices`],
      ['GET', `/sessions/${session}/devices/${d.info.serial}`],
      ['POST', `/sessions/${session}/devices/${d.info.serial}/release`],
      ['GET', `/sessions/${session}/devices/${d.info.serial}/screenshot`],
      ['POST', `/sessions/${session}/devices`],
    ] as const) {
      const r = await c.call(method, path, { token: other.token, body: method === 'POST' && path.endsWith('/devices') ? android() : undefined });
      expect(r.status, `${method} ${path}`).toBe(404);
    }
    const theirs = await newSession(other.token);
    expect((await c.call('GET', `/sessions/${theirs}/devices/${d.info.serial}`, { token: other.token })).status).toBe(404);
    const fleet = (await c.call('GET', '/fleet/devices', { token: other.token })).body.data;
    const seen = fleet.find((p: { serial: string }) => p.serial === d.info.serial);
    expect(seen.held).toBe(true);
    expect(seen.heldBy).toBeUndefined();
    expect(JSON.stringify(fleet)).not.toContain(session);
    expect((await devicesOf(session))[0].status).toBe('in_use');
    await release(session, d.info.serial);
    await freeAgain(d.info.serial);
  });

  it('meters device-seconds from assignment to release into the billing balance', async () => {
    const before = (await c.call('GET', '/billing/balance', { token: owner })).body.secondsRemaining.devices;
    const session = await newSession();
    const a = (await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: android(['name', 'EQUALS', 'Pixel 6']) })).body;
    const d = await untilStatus(session, a.id, 'in_use');
    await new Promise((r) => setTimeout(r, 2200));
    const during = (await c.call('GET', '/billing/balance', { token: owner })).body.secondsRemaining.devices;
    expect(before - during).toBeGreaterThanOrEqual(2);
    await release(session, d.info.serial);
    const after = (await c.call('GET', '/billing/balance', { token: owner })).body.secondsRemaining.devices;
    await new Promise((r) => setTimeout(r, 1100));
    expect((await c.call('GET', '/billing/balance', { token: owner })).body.secondsRemaining.devices).toBe(after);
    await freeAgain(d.info.serial);
  });
});
