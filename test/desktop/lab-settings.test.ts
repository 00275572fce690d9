import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, errorCode, settledLabSettings, startEngine, type TestEngine } from '../support/engine.js';

let t: TestEngine;
let c: ReturnType<typeof client>;
let owner: string;

beforeAll(async () => {
  t = await startEngine({ deviceConcurrencyQuota: 3, instanceConcurrencyQuota: 2 });
  c = client(t.api);
  owner = await c.login();
});
afterAll(async () => {
  await t.stop();
});

describe('GET /lab/settings', () => {
  it('200 with the whole contract: sign-up, LAN sharing, the secret store, adb and quotas', async () => {
    const r = await c.call('GET', '/lab/settings', { token: owner });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      signupOpen: true,
      lanSharing: { enabled: false, port: t.engine.services.config.lanPort, urls: [], certificateSha256: null },
      // No keychain was given to this engine: secrets are in the 0600 file, and the GUI warns.
      secretStore: 'file',
      // The test engine runs with BENCHTOP_ADB=off.
      adb: { enabled: false, host: '127.0.0.1', port: 5037 },
      usbmuxd: { enabled: false, address: 'UNIX:/var/run/usbmuxd' },
      // No iOS fleet, so no tunnel; go-ios is npm's, found in place.
      iosTunnel: { enabled: false, goIos: expect.stringMatching(/node_modules\/go-ios\/dist\/go-ios-[^/]+\/ios$/), developerDiskImage: null },
      quotas: { devices: 3, instances: 2 },
      deviceIdleSeconds: 900,
      deviceIdleMinSeconds: 10,
      reservationMaxHours: 8,
      // Off until the lab owner switches it on; the address it would use is the machine's first LAN address.
      remoteConnectOnLan: { enabled: false, host: t.engine.services.lanSharing.lanAddress() },
      // Kept unless the lab owner chooses a period; nothing stored yet, on a disk with room.
      testResultFiles: { keepDays: 0, storedBytes: 0, diskFreeBytes: expect.any(Number) },
      // A WebDriver run that does not say keeps its video.
      webDriverVideo: 'on',
    });
    expect(r.body.testResultFiles.diskFreeBytes).toBeGreaterThan(0);
  });

  it('401 without a token or with a bad one', async () => {
    const none = await c.call('GET', '/lab/settings');
    expect(none.status).toBe(401);
    errorCode(none);
    expect((await c.call('GET', '/lab/settings', { token: 'not-a-token' })).status).toBe(401);
  });

  it('403 for anyone but the lab owner, and for the owner\'s API key', async () => {
    const user = await c.signup('member@lab.test');
    const r = await c.call('GET', '/lab/settings', { token: user.token });
    expect(r.status).toBe(403);
    expect(errorCode(r)).toBe('not_lab_owner');
    const key = await c.createKey(owner);
    expect((await c.call('GET', '/lab/settings', { token: key })).status).toBe(403);
  });
});

describe('PATCH /lab/settings', () => {
  it('400 for every kind of bad input, changing nothing', async () => {
    const before = (await c.call('GET', '/lab/settings', { token: owner })).body;
    const bad: unknown[] = [
      { quotas: { devices: -1 } },
      { quotas: { instances: 1.5 } },
      { quotas: { devices: '3' } },
      { quotas: { devices: 1_000_000 } },
      { quotas: { phones: 2 } },
      { quotas: 4 },
      { adb: { host: '127.0.0.1' } },
      { adb: { host: '127.0.0.1', port: 0 } },
      { adb: { host: '127.0.0.1', port: 65536 } },
      { adb: { host: '', port: 5037 } },
      { adb: { host: 'two words', port: 5037 } },
      { adb: { host: 'a'.repeat(300), port: 5037 } },
      { adb: { host: '127.0.0.1', port: 5037, extra: true } },
      { lanSharing: 'yes' },
      { lanSharing: { enabled: true } },
      { signupOpen: 1 },
      { secretStore: 'keychain' },
      { unknown: true },
      { deviceIdleSeconds: 5 },
      { deviceIdleSeconds: -1 },
      { deviceIdleSeconds: 60.5 },
      { reservationMaxHours: 0 },
      { testResultFiles: { keepDays: -1 } },
      { testResultFiles: { keepDays: 3651 } },
      { testResultFiles: { keepDays: 1.5 } },
      { testResultFiles: { keepDays: '30' } },
      { testResultFiles: { keepDays: 30, storedBytes: 0 } },
      { testResultFiles: 30 },
      { webDriverVideo: 'sometimes' },
      { webDriverVideo: true },
      [],
      'text',
    ];
    for (const body of bad) {
      const r = await c.call('PATCH', '/lab/settings', { token: owner, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      errorCode(r);
    }
    const malformed = await c.call('PATCH', '/lab/settings', { token: owner, raw: '{"quotas":' });
    expect(malformed.status).toBe(400);
    expect(errorCode(malformed)).toBe('invalid_json');
    expect(settledLabSettings((await c.call('GET', '/lab/settings', { token: owner })).body)).toEqual(settledLabSettings(before));
  });

  it('401 without a token', async () => {
    const r = await c.call('PATCH', '/lab/settings', { body: { quotas: { devices: 1 } } });
    expect(r.status).toBe(401);
    errorCode(r);
  });

  it('403 for a member who is not the lab owner, and for an API key; nothing changes', async () => {
    const user = await c.signup('admin-elsewhere@lab.test');
    const r = await c.call('PATCH', '/lab/settings', { token: user.token, body: { quotas: { devices: 100 }, lanSharing: true } });
    expect(r.status).toBe(403);
    expect(errorCode(r)).toBe('not_lab_owner');
    const key = await c.createKey(owner);
    expect((await c.call('PATCH', '/lab/settings', { token: key, body: { quotas: { devices: 100 } } })).status).toBe(403);
    const now = (await c.call('GET', '/lab/settings', { token: owner })).body;
    expect(now.quotas.devices).toBe(3);
    expect(now.lanSharing.enabled).toBe(false);
  });

  it('changes only the fields given and answers the whole settings', async () => {
    const r = await c.call('PATCH', '/lab/settings', { token: owner, body: { quotas: { instances: 5 } } });
    expect(r.status).toBe(200);
    expect(r.body.quotas).toEqual({ devices: 3, instances: 5 });
    expect(r.body).toMatchObject({ signupOpen: true, secretStore: 'file', adb: { host: '127.0.0.1', port: 5037 } });
    const empty = await c.call('PATCH', '/lab/settings', { token: owner, body: {} });
    expect(empty.status).toBe(200);
    expect(settledLabSettings(empty.body)).toEqual(settledLabSettings(r.body));
  });
});

describe('quotas', () => {
  it('the instance quota set by the lab owner is the one POST /instances enforces', async () => {
    const session = (await c.call('POST', '/sessions', { token: owner })).body.id;
    await c.call('PATCH', '/lab/settings', { token: owner, body: { quotas: { instances: 0 } } });
    const refused = await c.call('POST', `/sessions/${session}/instances`, { token: owner, body: { os: 'macos' } });
    expect(refused.status).toBe(409);
    expect(errorCode(refused)).toBe('concurrency_limit');
    expect(refused.body.error.message).toContain('0 active instances');
    // Raised again, the quota no longer stands in the way: this lab has no Mac host, which is the next refusal.
    await c.call('PATCH', '/lab/settings', { token: owner, body: { quotas: { instances: 2 } } });
    const next = await c.call('POST', `/sessions/${session}/instances`, { token: owner, body: { os: 'macos' } });
    expect(next.status).toBe(409);
    expect(errorCode(next)).toBe('no_capacity');
  });

  it('quotas and the adb address persist across a restart, over the configured defaults', async () => {
    await c.call('PATCH', '/lab/settings', {
      token: owner,
      body: { quotas: { devices: 7, instances: 4 }, adb: { host: 'adb.lab.internal', port: 5038 }, signupOpen: false },
    });
    t = await t.restart();
    c = client(t.api);
    owner = await c.login();
    const r = await c.call('GET', '/lab/settings', { token: owner });
    expect(r.body).toMatchObject({
      signupOpen: false,
      quotas: { devices: 7, instances: 4 },
      adb: { enabled: false, host: 'adb.lab.internal', port: 5038 },
    });
  });
});
