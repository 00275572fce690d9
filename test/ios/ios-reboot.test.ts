import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsbmuxdAddress } from '../../src/main/engine/fleet/ios/usbmux.js';
import { NOTES, SETTINGS } from '../../src/sim/ios/index.js';
import { client, startEngine, type TestEngine } from '../support/engine.js';
import { startIosBus, type IosBus } from '../support/ios-lab.js';
import { waitFor } from '../support/lab.js';

describe('rebooting an iPhone through the API (diagnostics_relay, simulated iPhones, a real engine)', () => {
  let bus: IosBus;
  let engine: TestEngine;
  let c: ReturnType<typeof client>;
  let owner: string;

  beforeAll(async () => {
    bus = await startIosBus([{ name: 'Reboot iPhone', restartMs: 1500 }]);
    engine = await startEngine({ usbmuxd: parseUsbmuxdAddress(bus.address), deviceGraceSeconds: 10 });
    c = client(engine.api);
    owner = await c.login();
    await waitFor('the iPhone ready', async () => ((await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<{ state: string }>).find((p) => p.state === 'device'), 15_000);
  }, 60_000);
  afterAll(async () => {
    await engine?.stop();
    await bus?.stop();
  });

  const allocate = async () => {
    const session = (await c.call('POST', '/sessions', { token: owner })).body.id as string;
    const r = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'ios' }] } });
    expect(r.status).toBe(201);
    await waitFor('in_use', async () => (await c.call('GET', `/sessions/${session}/devices/${r.body.id}`, { token: owner })).body.status === 'in_use', 15_000);
    return { session, id: r.body.id as string };
  };

  it('restarts the phone: it goes offline, comes back in_use in the same allocation, awake, and actions work again', async () => {
    const phone = bus.phones[0]!;
    const { session, id } = await allocate();
    const act = (body: unknown) => c.call('POST', `/sessions/${session}/devices/${phone.udid}/actions`, { token: owner, body });
    expect((await act({ type: 'launchApp', packageName: SETTINGS })).status).toBe(200);
    expect(phone.board.foreground).toBe(SETTINGS);

    // Watch the allocation while the reboot runs: it must be seen offline at some point.
    const statuses = new Set<string>();
    let watching = true;
    const watch = (async () => {
      while (watching) {
        statuses.add((await c.call('GET', `/sessions/${session}/devices/${id}`, { token: owner })).body.status);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const started = Date.now();
    const r = await c.call('POST', `/sessions/${session}/devices/${phone.udid}/reboot`, { token: owner });
    const took = Date.now() - started;
    watching = false;
    await watch;
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true });
    // It really restarted: a new boot, and it was off the bus for the restart's length.
    expect(phone.bootCount).toBe(2);
    expect(took).toBeGreaterThanOrEqual(1500);
    expect(statuses).toContain('offline');

    // The same allocation, in_use again; the phone woken from its lock screen and on the home screen.
    const device = (await c.call('GET', `/sessions/${session}/devices/${id}`, { token: owner })).body;
    expect(device).toMatchObject({ id, status: 'in_use' });
    expect(phone.board.locked).toBe(false);
    expect(phone.board.foreground).toBeUndefined();
    expect(phone.board.running.size).toBe(0);

    // Driving works through WDA's new session.
    expect((await act({ type: 'launchApp', packageName: NOTES })).status).toBe(200);
    expect(phone.board.foreground).toBe(NOTES);
    const shot = await fetch(`${engine.api}/sessions/${session}/devices/${phone.udid}/screenshot`, { headers: { authorization: `Bearer ${owner}` } });
    expect(shot.status).toBe(200);

    expect((await c.call('POST', `/sessions/${session}/devices/${phone.udid}/release`, { token: owner })).status).toBe(202);
    await waitFor('released', async () => !((await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<{ serial: string; held?: unknown }>).find((p) => p.serial === phone.udid)?.held);
  }, 60_000);

  it("is 404 for another organization, which cannot restart the phone", async () => {
    const phone = bus.phones[0]!;
    const { session } = await allocate();
    const boots = phone.bootCount;
    const other = await c.signup('ios-reboot-other@ios.test');
    const theirs = await c.call('POST', `/sessions/${session}/devices/${phone.udid}/reboot`, { token: other.token });
    expect(theirs.status).toBe(404);
    expect(theirs.body.error.code).toBeTypeOf('string');
    const theirSession = (await c.call('POST', '/sessions', { token: other.token })).body.id as string;
    expect((await c.call('POST', `/sessions/${theirSession}/devices/${phone.udid}/reboot`, { token: other.token })).status).toBe(404);
    // Nothing reached the phone.
    await new Promise((r) => setTimeout(r, 300));
    expect(phone.bootCount).toBe(boots);
    expect(phone.restarting).toBe(false);
    await c.call('POST', `/sessions/${session}/devices/${phone.udid}/release`, { token: owner });
  });
});
