import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsbmuxdAddress } from '../../src/main/engine/fleet/ios/usbmux.js';
import { NOTES, SETTINGS, type SimulatedIPhone } from '../../src/sim/ios/index.js';
import { client, startEngine, type TestEngine } from '../support/engine.js';
import { startIosBus, type IosBus } from '../support/ios-lab.js';
import { waitFor } from '../support/lab.js';

const LAUNCH = 'launchSuspendedProcessWithDevicePath:bundleIdentifier:environment:arguments:options:';

/**
 * WebDriverAgent dying on a phone the fleet shows as `device`: the fleet used to recheck WDA only on
 * wda_unavailable phones, so such a phone stayed `device`, failing every action, until it was replugged.
 */
describe('WDA dies on an allocated iPhone (iOS 16: the engine can start it again through testmanagerd)', () => {
  let bus: IosBus;
  let engine: TestEngine;
  let c: ReturnType<typeof client>;
  let owner: string;

  beforeAll(async () => {
    bus = await startIosBus([{ name: 'Crashy', version: '16.7.8' }, { name: 'Untrusting', version: '16.7.8' }]);
    engine = await startEngine({ usbmuxd: parseUsbmuxdAddress(bus.address), deviceGraceSeconds: 30 });
    c = client(engine.api);
    owner = await c.login();
    await waitFor('both iPhones ready', async () => ((await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<{ state: string }>).filter((p) => p.state === 'device').length === 2, 15_000);
  }, 60_000);
  afterAll(async () => {
    await engine?.stop();
    await bus?.stop();
  });

  const allocate = async (name: string) => {
    const session = (await c.call('POST', '/sessions', { token: owner })).body.id as string;
    const r = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'ios' }, { attribute: 'name', operator: 'EQUALS', value: name }] } });
    expect(r.status).toBe(201);
    await waitFor('in_use', async () => (await c.call('GET', `/sessions/${session}/devices/${r.body.id}`, { token: owner })).body.status === 'in_use', 15_000);
    return { session, id: r.body.id as string };
  };
  const launches = (phone: SimulatedIPhone) => phone.testManager.received.filter((r) => r.selector === LAUNCH).length;
  const fleetRow = async (udid: string) => ((await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<Record<string, any>>).find((p) => p.serial === udid);

  it('the next action fails saying so, the engine starts WDA again at once, and actions work again in the same allocation', async () => {
    const phone = bus.phones[0]!;
    const { session, id } = await allocate('Crashy');
    const act = (body: unknown) => c.call('POST', `/sessions/${session}/devices/${phone.udid}/actions`, { token: owner, body });
    expect((await act({ type: 'launchApp', packageName: SETTINGS })).status).toBe(200);
    expect(launches(phone)).toBe(0);

    phone.killWda();
    const failedAt = Date.now();
    const failed = await act({ type: 'launchApp', packageName: NOTES });
    expect(failed.status).toBe(409);
    expect(failed.body.error.code).toBe('device_error');
    expect(failed.body.error.message).toMatch(/WebDriverAgent stopped answering/);
    expect(phone.board.foreground).toBe(SETTINGS);

    // Started again through testmanagerd, well before the 5 s periodic check could have noticed (it never looks at
    // a `device` phone anyway).
    await waitFor('WDA running again', () => phone.wdaRunning || undefined, 4000);
    expect(Date.now() - failedAt).toBeLessThan(4000);
    expect(launches(phone)).toBe(1);
    await waitFor('in_use again', async () => (await c.call('GET', `/sessions/${session}/devices/${id}`, { token: owner })).body.status === 'in_use' && (await fleetRow(phone.udid))?.state === 'device', 10_000);

    expect((await act({ type: 'launchApp', packageName: NOTES })).status).toBe(200);
    expect(phone.board.foreground).toBe(NOTES);
    await c.call('POST', `/sessions/${session}/devices/${phone.udid}/release`, { token: owner });
  }, 30_000);

  it('a WDA that cannot be started again leaves the phone wda_unavailable with the reason, and its allocation offline', async () => {
    const phone = bus.phones[1]!;
    const { session, id } = await allocate('Untrusting');
    phone.launchFailure = 'Unable to launch com.facebook.WebDriverAgentRunner.xctrunner because its profile has not been explicitly trusted by the user.';
    phone.killWda();
    const failedAt = Date.now();
    const failed = await c.call('POST', `/sessions/${session}/devices/${phone.udid}/actions`, { token: owner, body: { type: 'pressButton', button: 'HOME' } });
    expect(failed.status).toBe(409);
    expect(failed.body.error.message).toMatch(/WebDriverAgent stopped answering/);
    const row = await waitFor('wda_unavailable with the reason', async () => {
      const r = await fleetRow(phone.udid);
      return r?.state === 'wda_unavailable' && /not been explicitly trusted/.test(String(r.steps)) ? r : undefined;
    }, 4000);
    expect(Date.now() - failedAt).toBeLessThan(4000);
    expect(row.steps).toMatch(/refused to launch/);
    expect((await c.call('GET', `/sessions/${session}/devices/${id}`, { token: owner })).body.status).toBe('offline');
    // Actions now say the phone is not in use, rather than failing on the phone.
    const refused = await c.call('POST', `/sessions/${session}/devices/${phone.udid}/actions`, { token: owner, body: { type: 'pressButton', button: 'HOME' } });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('device_not_in_use');
  }, 30_000);
});
