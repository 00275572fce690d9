import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeLabSummary, labSummary } from '../../src/main/engine/services/lab.js';
import { startAdbServer, type AdbServer } from '../support/android-sim/index.js';
import { client, errorCode } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';

const hasAdb = adbOrSkip();

describe.skipIf(!hasAdb)('lab settings over a real adb server and a simulated phone', () => {
  let lab: TestLab;
  let emptyAdb: AdbServer;
  let c: ReturnType<typeof client>;
  let owner: string;

  const phoneState = async () =>
    (await c.call('GET', '/fleet/devices', { token: owner })).body.data.find((p: { serial: string }) => p.serial === lab.serials[0])?.state;
  const restart = async () => {
    lab.engine = await lab.engine.restart();
    c = client(lab.engine.api);
    owner = await c.login();
  };

  beforeAll(async () => {
    [lab, emptyAdb] = await Promise.all([startLab([{ model: 'Pixel 8' }]), startAdbServer()]);
    c = client(lab.engine.api);
    owner = await c.login();
    await waitFor('the phone in the fleet', async () => (await phoneState()) === 'device');
  });
  afterAll(async () => {
    await lab?.stop();
    await emptyAdb?.stop();
  });

  it('the device quota set by the lab owner is the one allocation enforces; the tray summary follows the phone', async () => {
    const context = () => lab.engine.engine.context;
    expect(labSummary(context())).toEqual({ phones: { free: 1, inUse: 0 }, instances: { running: 0 } });
    expect(describeLabSummary(labSummary(context()))).toBe('1 phone free, 0 in use; 0 instances running');

    await c.call('PATCH', '/lab/settings', { token: owner, body: { quotas: { devices: 0 } } });
    const session = (await c.call('POST', '/sessions', { token: owner })).body.id;
    const refused = await c.call('POST', `/sessions/${session}/devices`, {
      token: owner,
      body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }] },
    });
    expect(refused.status).toBe(409);
    expect(errorCode(refused)).toBe('concurrency_limit');

    await c.call('PATCH', '/lab/settings', { token: owner, body: { quotas: { devices: 1 } } });
    const held = await allocateInUse(c, owner);
    expect(labSummary(context())).toEqual({ phones: { free: 0, inUse: 1 }, instances: { running: 0 } });
    expect(describeLabSummary(labSummary(context()))).toBe('0 phones free, 1 in use; 0 instances running');

    await c.call('POST', `/sessions/${held.session}/devices/${held.id}/release`, { token: owner });
    await waitFor('the phone free again after its cleanup', () => labSummary(context()).phones.free === 1);
  });

  it('the adb address is saved at once and tracked from the next start', async () => {
    const saved = await c.call('PATCH', '/lab/settings', { token: owner, body: { adb: { host: '127.0.0.1', port: emptyAdb.port } } });
    expect(saved.status).toBe(200);
    expect(saved.body.adb).toEqual({ enabled: true, host: '127.0.0.1', port: emptyAdb.port });
    // Until the next start the fleet keeps tracking the adb server it started with.
    expect(await phoneState()).toBe('device');

    // An adb server with no phone: the lab's phone is no longer attached.
    await restart();
    expect((await c.call('GET', '/lab/settings', { token: owner })).body.adb.port).toBe(emptyAdb.port);
    await waitFor('the phone gone from the empty adb server', async () => (await phoneState()) === 'gone');
    expect(labSummary(lab.engine.engine.context).phones).toEqual({ free: 0, inUse: 0 });

    await c.call('PATCH', '/lab/settings', { token: owner, body: { adb: { host: '127.0.0.1', port: lab.adb.port } } });
    await restart();
    await waitFor('the phone back through the lab\'s adb server', async () => (await phoneState()) === 'device');
  });
});
