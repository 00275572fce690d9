import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IosFleet } from '../../src/main/engine/fleet/ios/ios-fleet.js';
import { parseUsbmuxdAddress } from '../../src/main/engine/fleet/ios/usbmux.js';
import { startIosBus, type IosBus } from '../support/ios-lab.js';
import { waitFor } from '../support/lab.js';

/**
 * An iPhone whose lockdown stopped answering while usbmuxd still lists it (a bad cable) must not hold up the fleet's
 * first look, which the allocator waits for: the others are listed; lockdown's time-out lists it offline (not untrusted),
 * and it joins once it answers. Simulated usbmuxd and iPhones.
 */
describe('an iPhone that stops answering', () => {
  let bus: IosBus;
  let fleet: IosFleet | undefined;

  beforeAll(async () => {
    bus = await startIosBus();
  });
  afterAll(async () => {
    await fleet?.stop();
    await bus?.stop();
  });

  it('does not hold up the first look: the other is listed, and it joins once it answers', async () => {
    const wedged = await bus.plug({ name: 'Wedged' });
    const fine = await bus.plug({ name: 'Fine' });
    wedged.wedge();
    const said: string[] = [];
    fleet = new IosFleet(parseUsbmuxdAddress(bus.address), (line) => said.push(line), undefined, 1_000);
    const started = performance.now();
    await fleet.start();
    // Without a bound the start never ended (the first look waited on the wedged phone's lockdown).
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(fleet.get(fine.udid)).toMatchObject({ name: 'Fine', state: 'device' });
    expect(fleet.get(wedged.udid)).toBeUndefined();
    expect(said.some((l) => /Reading the iPhones already plugged in took longer than 1 s: those that answered are listed/.test(l))).toBe(true);

    // Lockdown's own time-out (5 s) is not a refusal: the phone is offline, not untrusted, and read again.
    await waitFor('the wedged iPhone listed offline', () => fleet!.get(wedged.udid)?.state === 'offline', 15_000);
    expect(said.some((l) => l.includes(`${wedged.udid}: lockdown did not answer`))).toBe(true);
    expect(said.some((l) => l.includes('must trust this computer'))).toBe(false);

    wedged.wedge(false);
    await waitFor('the iPhone that answers again is listed', () => fleet!.get(wedged.udid)?.state === 'device', 20_000).catch((error: Error) => {
      throw new Error(`${error.message}: ${JSON.stringify(fleet!.get(wedged.udid))}; ${said.join(' / ')}`);
    });
    expect(fleet.get(wedged.udid)).toMatchObject({ name: 'Wedged' });
  }, 60_000);
});
