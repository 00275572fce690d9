/**
 * The engine side of the phone page: the device panel's details read from the phone, and a session that can be
 * named and ended (extensions beyond the spec).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, errorCode } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';

const hasAdb = adbOrSkip();
const ANDROID = { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }] };

describe.skipIf(!hasAdb)('the phone page\'s API', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;

  beforeAll(async () => {
    lab = await startLab([{ model: 'Pixel 7', osVersion: '14', sdk: 34, battery: 63, width: 1080, height: 2400, density: 420 }, { model: 'Pixel 5', osVersion: '12' }]);
    c = client(lab.engine.api);
    owner = await c.login();
  }, 60_000);
  afterAll(() => lab?.stop());

  it('info reports model, OS, ABI, screen, battery and network as the phone says them now', async () => {
    const { session, serial } = await allocateInUse(c, owner, 'Pixel 7');
    const info = async () => {
      const r = await c.call('GET', `/sessions/${session}/devices/${serial}/info`, { token: owner });
      expect(r.status).toBe(200);
      return r.body;
    };
    expect(await info()).toMatchObject({
      serial,
      platform: 'android',
      model: 'Pixel 7',
      osVersion: '14',
      sdk: 34,
      abi: 'arm64-v8a',
      screen: { width: 1080, height: 2400, density: 420 },
      battery: { level: 63 },
      network: { wifi: true, airplaneMode: false },
    });
    lab.phone(serial).setBattery(41);
    await c.call('POST', `/sessions/${session}/devices/${serial}/actions`, { token: owner, body: { type: 'pressButton', button: 'HOME' } });
    expect((await info()).battery.level).toBe(41);

    // Another session's phone is not found; a released one is not in use.
    const other = (await c.call('POST', '/sessions', { token: owner })).body.id;
    expect(errorCode(await c.call('GET', `/sessions/${other}/devices/${serial}/info`, { token: owner }))).toBe('device_not_found');
    await c.call('POST', `/sessions/${session}/devices/${serial}/release`, { token: owner });
    const released = await c.call('GET', `/sessions/${session}/devices/${serial}/info`, { token: owner });
    expect([released.status, errorCode(released)]).toEqual([409, 'device_not_in_use']);
  });

  it('a session can be named, renamed and cleared; a blank name clears it', async () => {
    const sid = (await c.call('POST', '/sessions', { token: owner })).body.id;
    expect((await c.call('GET', `/sessions/${sid}`, { token: owner })).body).toMatchObject({ name: null, endedAt: null });
    const named = await c.call('PATCH', `/sessions/${sid}`, { token: owner, body: { name: '  checkout flow  ' } });
    expect([named.status, named.body.name]).toEqual([200, 'checkout flow']);
    expect((await c.call('GET', '/sessions', { token: owner })).body.data.find((s: { id: string }) => s.id === sid).name).toBe('checkout flow');
    expect((await c.call('PATCH', `/sessions/${sid}`, { token: owner, body: { name: ' ' } })).body.name).toBeNull();
    expect((await c.call('PATCH', `/sessions/${sid}`, { token: owner, body: { name: 'x'.repeat(101) } })).status).toBe(400);
    expect((await c.call('PATCH', `/sessions/${sid}`, { token: owner, body: { title: 'x' } })).status).toBe(400);
    expect((await c.call('PATCH', '/sessions/00000000-0000-4000-8000-000000000000', { token: owner, body: { name: 'x' } })).status).toBe(404);
    // Another organization's session is not found.
    const stranger = await c.signup('stranger@lab.test');
    expect((await c.call('PATCH', `/sessions/${sid}`, { token: stranger.token, body: { name: 'mine' } })).status).toBe(404);
    expect((await c.call('POST', `/sessions/${sid}/end`, { token: stranger.token })).status).toBe(404);
  });

  it('ending a session releases every phone it holds, frees them for others, and refuses new allocations', async () => {
    const { session, serial } = await allocateInUse(c, owner, 'Pixel 5');
    const ended = await c.call('POST', `/sessions/${session}/end`, { token: owner });
    expect(ended.status).toBe(202);
    expect(ended.body.endedAt).toEqual(expect.any(String));
    expect(ended.body.devices[0]).toMatchObject({ status: 'released' });
    // Idempotent: when it ended does not move.
    const again = await c.call('POST', `/sessions/${session}/end`, { token: owner });
    expect([again.status, again.body.endedAt]).toEqual([202, ended.body.endedAt]);
    const refused = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: ANDROID });
    expect([refused.status, errorCode(refused)]).toEqual([409, 'session_ended']);
    const mac = await c.call('POST', `/sessions/${session}/instances`, { token: owner, body: { os: 'macos' } });
    expect([mac.status, errorCode(mac)]).toEqual([409, 'session_ended']);
    // The phone is cleaned and free: another session gets it.
    await waitFor('the phone to be free again', async () => {
      const fleet = (await c.call('GET', '/fleet/devices', { token: owner })).body.data;
      return fleet.find((d: { serial: string; held: boolean }) => d.serial === serial && !d.held);
    });
    expect((await allocateInUse(c, owner, 'Pixel 5')).serial).toBe(serial);
  });
});
