import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeLabSummary } from '../../src/main/engine/services/lab-summary.js';
import { connectToAdb, SimulatedPhone, startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { client, errorCode } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';

const hasAdb = adbOrSkip();

describe.skipIf(!hasAdb)('lab settings over a real adb server and a simulated phone', () => {
  let lab: TestLab;
  /** A second adb server, with a phone of its own. */
  let otherAdb: AdbServer;
  let otherPhone: SimulatedPhone;
  let otherSerial: string;
  let c: ReturnType<typeof client>;
  let owner: string;

  const stateOf = async (serial: string) =>
    (await c.call('GET', '/fleet/devices', { token: owner })).body.data.find((p: { serial: string }) => p.serial === serial)?.state;
  const phoneState = () => stateOf(lab.serials[0]!);
  const restart = async () => {
    lab.engine = await lab.engine.restart();
    c = client(lab.engine.api);
    owner = await c.login();
  };

  beforeAll(async () => {
    [lab, otherAdb] = await Promise.all([startLab([{ model: 'Pixel 8' }]), startAdbServer()]);
    otherPhone = new SimulatedPhone({ model: 'Pixel 6' });
    otherSerial = await connectToAdb(await otherPhone.start(), otherAdb.port);
    c = client(lab.engine.api);
    owner = await c.login();
    await waitFor('the phone in the fleet', async () => (await phoneState()) === 'device');
  });
  afterAll(async () => {
    await lab?.stop();
    await otherPhone?.stop();
    await otherAdb?.stop();
  });

  it('the device quota set by the lab owner is the one allocation enforces; the tray summary follows the phone', async () => {
    const summary = () => lab.engine.engine.summary();
    expect(summary()).toEqual({ phones: { free: 1, inUse: 0 }, instances: { running: 0 } });
    expect(describeLabSummary(summary())).toBe('1 phone free, 0 in use; 0 instances running');

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
    expect(summary()).toEqual({ phones: { free: 0, inUse: 1 }, instances: { running: 0 } });
    expect(describeLabSummary(summary())).toBe('0 phones free, 1 in use; 0 instances running');

    await c.call('POST', `/sessions/${held.session}/devices/${held.id}/release`, { token: owner });
    await waitFor('the phone free again after its cleanup', () => summary().phones.free === 1);
  });

  it('a new adb address is tracked at once: an allocated phone goes offline, and is in_use again when it comes back', async () => {
    const held = await allocateInUse(c, owner);
    const allocation = async () => (await c.call('GET', `/sessions/${held.session}/devices/${held.id}`, { token: owner })).body.status;

    const moved = await c.call('PATCH', '/lab/settings', { token: owner, body: { adb: { host: '127.0.0.1', port: otherAdb.port } } });
    expect(moved.status).toBe(200);
    expect(moved.body.adb).toEqual({ enabled: true, host: '127.0.0.1', port: otherAdb.port });
    // The new server shows its own phone only: the lab's is gone, and its allocation waits out the grace period.
    await waitFor('the other server\'s phone', async () => (await stateOf(otherSerial)) === 'device');
    expect(await phoneState()).toBe('gone');
    await waitFor('the allocation offline', async () => (await allocation()) === 'offline');
    expect(lab.engine.engine.summary().phones).toEqual({ free: 1, inUse: 0 });

    await c.call('PATCH', '/lab/settings', { token: owner, body: { adb: { host: '127.0.0.1', port: lab.adb.port } } });
    await waitFor('the phone back through the lab\'s adb server', async () => (await phoneState()) === 'device');
    await waitFor('the allocation in_use again', async () => (await allocation()) === 'in_use');
    expect(await stateOf(otherSerial)).toBe('gone');
    await c.call('POST', `/sessions/${held.session}/devices/${held.id}/release`, { token: owner });
  });

  it('the saved adb address is the one tracked after a restart', async () => {
    await c.call('PATCH', '/lab/settings', { token: owner, body: { adb: { host: '127.0.0.1', port: otherAdb.port } } });
    await restart();
    expect((await c.call('GET', '/lab/settings', { token: owner })).body.adb).toEqual({ enabled: true, host: '127.0.0.1', port: otherAdb.port });
    await waitFor('the other server\'s phone after the restart', async () => (await stateOf(otherSerial)) === 'device');
    expect(await phoneState()).toBe('gone');

    await c.call('PATCH', '/lab/settings', { token: owner, body: { adb: { host: '127.0.0.1', port: lab.adb.port } } });
    await restart();
    await waitFor('the phone back through the lab\'s adb server', async () => (await phoneState()) === 'device');
    expect(await stateOf(otherSerial)).toBe('gone');
  });
});
