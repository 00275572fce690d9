import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AndroidFleet } from '../../src/main/engine/fleet/android/android-fleet.js';
import type { Phone } from '../../src/main/engine/fleet/types.js';
import { connectToAdb, SimulatedPhone, startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { adbOrSkip, waitFor } from '../support/lab.js';

/**
 * A phone whose adbd stopped answering while adb still lists it as a device (a USB link gone bad) must not hold up the
 * fleet's first look, which the allocator waits for before it hands out any phone: it is listed offline, the others
 * as they are, and it is read again until it answers. Real adb server, simulated phones.
 */
const hasAdb = adbOrSkip();

describe.skipIf(!hasAdb)('a phone that stops answering', () => {
  let adb: AdbServer;
  const models = ['Wedged', 'Fine'];
  const phones = models.map((model) => new SimulatedPhone({ model }));
  const serials: string[] = [];
  let fleet: AndroidFleet | undefined;

  beforeAll(async () => {
    adb = await startAdbServer();
    for (const phone of phones) {
      const port = await phone.start();
      serials.push(await connectToAdb(port, adb.port));
    }
    await waitFor('both phones are devices', async () => (await adb.run(['devices'])).stdout.toString().split('\n').filter((l) => /\tdevice$/.test(l)).length === 2);
  });
  afterAll(async () => {
    await fleet?.stop();
    for (const phone of phones) await phone.stop();
    await adb?.stop();
  });

  it('is listed offline without holding up the others, said once, and joins as a device once it answers', async () => {
    phones[0]!.wedge();
    const said: string[] = [];
    fleet = new AndroidFleet({ host: '127.0.0.1', port: adb.port }, (line) => said.push(line), undefined, undefined, { describeMs: 1_000, readAgainMs: 500 });
    const started = performance.now();
    await fleet.start();
    const byModel = (model: string) => fleet!.list().find((p: Phone) => p.serial === serials[models.indexOf(model)]);
    // Without a bound the start never ended (the first look waited on the wedged phone's getprop).
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(byModel('Fine')).toMatchObject({ state: 'device', name: 'Fine' });
    expect(byModel('Wedged')).toMatchObject({ state: 'offline' });

    // Asked again every half second while it stays wedged, and said once.
    await new Promise((r) => setTimeout(r, 2_500));
    expect(said.filter((l) => l.includes(serials[0]!))).toHaveLength(1);
    expect(said[0]).toMatch(/could not read its properties: Reading its properties took longer than 1 s; trying again every 0.5 s/);

    phones[0]!.wedge(false);
    await waitFor('the phone that answers again is a device', () => byModel('Wedged')?.state === 'device', 15_000);
    expect(byModel('Wedged')).toMatchObject({ name: 'Wedged' });
  }, 40_000);
});
