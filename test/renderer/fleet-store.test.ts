import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFleetStore } from '../../src/renderer/stores/fleet-store.js';
import { client } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';
import { clientFor } from './support.js';

const hasAdb = adbOrSkip();

describe.runIf(hasAdb)('fleet store', () => {
  let lab: TestLab;
  let token: string;

  beforeAll(async () => {
    lab = await startLab([{ model: 'Pixel 7', battery: 64 }]);
    token = await client(lab.engine.api).login();
  });
  afterAll(() => lab?.stop());

  it('lists the phones, reports plug and unplug between polls, and shows which phone this organization holds', async () => {
    let now = 1000;
    // The engine learns of the phone from adb's device tracking, and reads its name and battery after that: on a busy
    // machine that is not done yet when startLab returns. The store's first poll comes after, so it sees no change.
    await waitFor('Pixel 7 listed with its battery', async () => {
      const fleet = (await client(lab.engine.api).call('GET', '/fleet/devices', { token })).body.data as Array<{ name: string; battery?: number }>;
      return fleet.some((d) => d.name === 'Pixel 7' && d.battery === 64);
    }, 20_000);
    const store = createFleetStore(() => clientFor(lab.engine.api, token), () => now);
    await store.getState().refresh();
    expect(store.getState()).toMatchObject({ loaded: true, error: undefined, changes: [], hosts: [], providers: [] });
    expect(store.getState().devices).toEqual([expect.objectContaining({ name: 'Pixel 7', battery: 64, held: false })]);

    const serial = await lab.plug({ model: 'Pixel 8' });
    now = 2000;
    await waitFor('the new phone in the store', async () => {
      await store.getState().refresh();
      return store.getState().devices.some((d) => d.serial === serial && d.name === 'Pixel 8');
    });
    expect(store.getState().changes).toEqual([{ serial, name: 'Pixel 8', change: 'plugged', at: 2000 }]);

    await lab.unplug(serial);
    now = 3000;
    await waitFor('the unplugged phone', async () => {
      await store.getState().refresh();
      return store.getState().changes.length === 2;
    });
    expect(store.getState().changes[0]).toEqual({ serial, name: 'Pixel 8', change: 'unplugged', at: 3000 });

    // A poll that finds nothing changed keeps the very same list, so that the Fleet screen renders no row again.
    const before = store.getState().devices;
    await store.getState().refresh();
    expect(store.getState().devices).toBe(before);

    const held = await allocateInUse(client(lab.engine.api), token, 'Pixel 7');
    await store.getState().refresh();
    const after = store.getState().devices;
    expect(after.find((d) => d.serial === held.serial)).toMatchObject({ held: true, heldBy: { sessionId: held.session } });
    // Only the phone that changed is a new object; the unplugged one is kept as it was.
    expect(after).not.toBe(before);
    expect(after.find((d) => d.serial === serial)).toBe(before.find((d) => d.serial === serial));
    expect(after.find((d) => d.serial === held.serial)).not.toBe(before.find((d) => d.serial === held.serial));
  });

  it('polls until stopped, one request at a time, and keeps the last list when a poll fails', async () => {
    let calls = 0;
    const real = clientFor(lab.engine.api, token);
    let failing = false;
    const api = {
      ...real,
      fleetDevices: () => {
        calls++;
        return failing ? clientFor(lab.engine.api, 'mob_revoked').fleetDevices() : real.fleetDevices();
      },
    };
    const store = createFleetStore(() => api);
    const stop = store.getState().poll(20);
    await waitFor('three polls', () => calls >= 3);
    failing = true;
    await waitFor('a failed poll', () => store.getState().error);
    expect(store.getState().devices.length).toBeGreaterThan(0);
    stop();
    const after = calls;
    await new Promise((r) => setTimeout(r, 100));
    expect(calls - after).toBeLessThanOrEqual(1);

    // A poll started just after an answer (the page's early request) does not ask again at once, but in its turn.
    failing = false;
    await store.getState().refresh();
    const answered = calls;
    const stopSlow = store.getState().poll(400);
    await new Promise((r) => setTimeout(r, 150));
    expect(calls).toBe(answered);
    await waitFor('the poll in its turn', () => calls > answered);
    stopSlow();
  });
});
