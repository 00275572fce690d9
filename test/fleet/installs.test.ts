import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApk, buildIpa, sha256 } from '../support/app-fixtures.js';
import { client, errorCode, type Reply } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';

const hasAdb = adbOrSkip();
const UNKNOWN = '6f1c1a52-52a8-4a8e-9a55-1b5f3c9f0000';

describe.skipIf(!hasAdb)('installing stored files on phones (real adb, simulated phones)', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;

  beforeAll(async () => {
    lab = await startLab([{ model: 'Pixel 8', osVersion: '14' }, { model: 'Pixel 7', osVersion: '14' }], { deviceConcurrencyQuota: 4 });
    c = client(lab.engine.api);
    owner = await c.login();
  }, 60_000);
  afterAll(() => lab?.stop());

  async function upload(bytes: Buffer, token = owner, org?: string): Promise<Reply> {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(bytes)]), 'app.bin');
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (org) headers['x-organization-id'] = org;
    const res = await fetch(`${lab.engine.api}/files/upload`, { method: 'POST', headers, body: form });
    return { status: res.status, body: await res.json(), headers: res.headers };
  }

  /** Uploads and waits until the file is ready; resolves to its id. */
  async function readyFile(bytes: Buffer, token = owner, org?: string): Promise<string> {
    const id = (await upload(bytes, token, org)).body.id as string;
    await waitFor(`file ${id} ready`, async () => (await c.call('GET', `/files/${id}`, { token, org })).body.status === 'ready');
    return id;
  }

  const install = (session: string, serial: string, body: unknown, token = owner) =>
    c.call('POST', `/sessions/${session}/devices/${serial}/install`, { token, body });
  const free = (serial: string) =>
    waitFor(`${serial} to be free`, async () => {
      const fleet = (await c.call('GET', '/fleet/devices', { token: owner })).body.data;
      return fleet.find((p: { serial: string; held: boolean }) => p.serial === serial && !p.held);
    });
  const android = { attribute: 'platform', operator: 'EQUALS', value: 'android' };

  it('installs a ready APK (push + pm install), launches it when asked, and uninstalls it at release', async () => {
    const fileId = await readyFile(buildApk({ packageName: 'com.example.installed', label: 'Installed', versionCode: 3 }));
    const { session, serial } = await allocateInUse(c, owner, 'Pixel 8');
    const phone = lab.phone(serial);
    expect(phone.state.packages).not.toContain('com.example.installed');

    const r = await install(session, serial, { file: fileId });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ file: fileId, status: 'installed', bundleId: 'com.example.installed', launched: false });
    expect(phone.state.packages).toContain('com.example.installed');

    // file:<id> works too, and launch brings the app to the front.
    const launched = await install(session, serial, { file: `file:${fileId}`, launch: true });
    expect(launched.body).toMatchObject({ status: 'installed', launched: true });
    expect(phone.state.foregroundPackage).toBe('com.example.installed');

    expect((await c.call('POST', `/sessions/${session}/devices/${serial}/release`, { token: owner })).status).toBe(202);
    await free(serial);
    expect(phone.state.packages).not.toContain('com.example.installed');
    expect(phone.state.packages).toContain('com.android.settings');
  });

  it('answers 400, 401, 403, 404 and 409 as declared', async () => {
    const apk = await readyFile(buildApk({ packageName: 'com.example.statuses' }));
    const ipa = await readyFile(buildIpa({ bundleId: 'com.example.ios', shortVersion: '1.0', build: '1' }));
    const pendingApk = buildApk({ packageName: 'com.example.pending' });
    const pending = (await c.call('POST', '/files', { token: owner, body: { filename: 'p.apk', filesize: pendingApk.length, sha256: sha256(pendingApk) } })).body.id;
    const other = await c.signup('installer-other@installs.test');
    const foreign = await readyFile(buildApk({ packageName: 'com.example.foreign' }), other.token);
    const { session, serial } = await allocateInUse(c, owner, 'Pixel 7');

    for (const body of [{}, { file: 42 }, { file: apk, extra: true }, { file: apk, launch: 'yes' }]) {
      const r = await install(session, serial, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(errorCode(r)).toBe('invalid_request');
    }
    const wrong = await install(session, serial, { file: ipa });
    expect(wrong.status).toBe(400);
    expect(errorCode(wrong)).toBe('wrong_platform');

    expect((await c.call('POST', `/sessions/${session}/devices/${serial}/install`, { body: { file: apk } })).status).toBe(401);

    const reader = await c.signup('installer-reader@installs.test');
    const org = (await c.call('GET', '/organizations', { token: owner })).body.data.find((o: { personal: boolean }) => o.personal).id;
    await c.addMember(owner, org, reader.token, 'installer-reader@installs.test', 'readonly');
    const refused = await c.call('POST', `/sessions/${session}/devices/${serial}/install`, { token: reader.token, org, body: { file: apk } });
    expect(refused.status).toBe(403);
    expect(errorCode(refused)).toBe('insufficient_role');

    for (const file of [UNKNOWN, `file:${UNKNOWN}`, foreign, 'not-an-id']) {
      const r = await install(session, serial, { file });
      expect(r.status, file).toBe(404);
      expect(errorCode(r)).toBe('file_not_found');
    }
    expect(errorCode(await install(session, 'NO-SUCH-SERIAL', { file: apk }))).toBe('device_not_found');
    // Another organization's session is not found either.
    expect((await install(session, serial, { file: foreign }, other.token)).status).toBe(404);

    const notReady = await install(session, serial, { file: pending });
    expect(notReady.status).toBe(409);
    expect(errorCode(notReady)).toBe('file_not_ready');

    await c.call('POST', `/sessions/${session}/devices/${serial}/release`, { token: owner });
    const released = await install(session, serial, { file: apk });
    expect(released.status).toBe(409);
    expect(errorCode(released)).toBe('device_not_in_use');
    await free(serial);
  });

  it('installApps installs before the device goes in_use, and cleanup removes the apps at release', async () => {
    const first = await readyFile(buildApk({ packageName: 'com.example.first', versionCode: 1 }));
    const second = await readyFile(buildApk({ packageName: 'com.example.second', versionCode: 1 }));
    const session = (await c.call('POST', '/sessions', { token: owner })).body.id;
    const a = await c.call('POST', `/sessions/${session}/devices`, {
      token: owner,
      body: { filters: [android, { attribute: 'name', operator: 'EQUALS', value: 'Pixel 8' }], installApps: [`file:${first}`, `file:${second}`] },
    });
    expect(a.status).toBe(201);
    // The first poll that sees in_use must already find both apps on the phone.
    const d = await waitFor('in_use', async () => {
      const x = (await c.call('GET', `/sessions/${session}/devices/${a.body.id}`, { token: owner })).body;
      return x.status === 'in_use' ? x : undefined;
    });
    const phone = lab.phone(d.info.serial);
    expect(phone.state.packages).toEqual(expect.arrayContaining(['com.example.first', 'com.example.second']));
    await c.call('POST', `/sessions/${session}/devices/${d.info.serial}/release`, { token: owner });
    await free(d.info.serial);
    expect(phone.state.packages).not.toContain('com.example.first');
    expect(phone.state.packages).not.toContain('com.example.second');
  });

  it('installApps refuses an unknown or foreign file (404 file_not_found), an app of the other platform (400), a file not ready (409)', async () => {
    const session = (await c.call('POST', '/sessions', { token: owner })).body.id;
    const other = await c.signup('installapps-other@installs.test');
    const foreign = await readyFile(buildApk({ packageName: 'com.example.theirs' }), other.token);
    const ipa = await readyFile(buildIpa({ bundleId: 'com.example.iosonly' }));
    const pendingApk = buildApk({ packageName: 'com.example.notyet' });
    const pending = (await c.call('POST', '/files', { token: owner, body: { filename: 'p.apk', filesize: pendingApk.length, sha256: sha256(pendingApk) } })).body.id;
    const allocate = (installApps: string[]) => c.call('POST', `/sessions/${session}/devices`, { token: owner, body: { filters: [android], installApps } });
    for (const ref of [`file:${UNKNOWN}`, `file:${foreign}`]) {
      const r = await allocate([ref]);
      expect(r.status).toBe(404);
      expect(errorCode(r)).toBe('file_not_found');
    }
    const wrong = await allocate([`file:${ipa}`]);
    expect(wrong.status).toBe(400);
    expect(errorCode(wrong)).toBe('wrong_platform');
    const notReady = await allocate([`file:${pending}`]);
    expect(notReady.status).toBe(409);
    expect(errorCode(notReady)).toBe('file_not_ready');
    expect((await c.call('GET', `/sessions/${session}/devices`, { token: owner })).body.data).toEqual([]);
  });

  it('a release while installApps is still installing cleans the phone after the install, so the app does not stay', async () => {
    const serial = await lab.plug({ model: 'Pixel 6', osVersion: '14', installMs: 1500 });
    const phone = lab.phone(serial);
    const fileId = await readyFile(buildApk({ packageName: 'com.example.slow' }));
    const session = (await c.call('POST', '/sessions', { token: owner })).body.id;
    const a = await c.call('POST', `/sessions/${session}/devices`, {
      token: owner,
      body: { filters: [android, { attribute: 'name', operator: 'EQUALS', value: 'Pixel 6' }], installApps: [`file:${fileId}`] },
    });
    expect(a.body.status).toBe('provisioning');
    // Preparing takes a few adb commands; then pm install runs for 1.5 s, and the release lands in the middle of it.
    await new Promise((r) => setTimeout(r, 700));
    const released = await c.call('POST', `/sessions/${session}/devices/${a.body.id}/release`, { token: owner });
    expect(released.status).toBe(202);
    expect(phone.state.packages).not.toContain('com.example.slow');
    await free(serial);
    // Past the end of the install that was in flight: whatever it put on the phone is there by now.
    await new Promise((r) => setTimeout(r, 1600));
    expect(phone.state.packages).not.toContain('com.example.slow');
    // The tests after this one count on two phones.
    await lab.unplug(serial);
  });

  it('an installApps file deleted before the phone is assigned releases the allocation as install_failed', async () => {
    const fileId = await readyFile(buildApk({ packageName: 'com.example.vanishing' }));
    // Both phones busy: the allocation queues.
    const held = [await allocateInUse(c, owner, 'Pixel 8'), await allocateInUse(c, owner, 'Pixel 7')];
    const session = (await c.call('POST', '/sessions', { token: owner })).body.id;
    const a = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: { filters: [android], installApps: [`file:${fileId}`] } });
    expect(a.body.status).toBe('queued');
    expect((await c.call('DELETE', `/files/${fileId}`, { token: owner })).status).toBe(204);
    for (const h of held) await c.call('POST', `/sessions/${h.session}/devices/${h.serial}/release`, { token: owner });
    const d = await waitFor('released', async () => {
      const x = (await c.call('GET', `/sessions/${session}/devices/${a.body.id}`, { token: owner })).body;
      return x.status === 'released' ? x : undefined;
    });
    expect(d.releaseReason).toBe('install_failed');
  });
});
