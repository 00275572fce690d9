import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IosFleet } from '../../src/main/engine/fleet/ios/ios-fleet.js';
import { parseUsbmuxdAddress } from '../../src/main/engine/fleet/ios/usbmux.js';
import type { Phone } from '../../src/main/engine/fleet/types.js';
import { startIosBus, type IosBus } from '../support/ios-lab.js';
import { waitFor } from '../support/lab.js';

describe('the engine starts an installed WebDriverAgent runner (simulated iPhones)', () => {
  let bus: IosBus;
  let fleet: IosFleet;
  const lines: string[] = [];

  beforeAll(async () => {
    bus = await startIosBus();
    fleet = new IosFleet(parseUsbmuxdAddress(bus.address), (line) => lines.push(line), { bundleId: 'com.facebook.WebDriverAgentRunner.xctrunner', xcrun: null });
    await fleet.start();
  }, 30_000);
  afterAll(async () => {
    await fleet?.stop();
    await bus?.stop();
  });
  const state = (udid: string) => fleet.get(udid)?.state;

  it('iOS 16 with WDA stopped: starts it through testmanagerd and the phone becomes device', async () => {
    const phone = await bus.plug({ name: 'Sixteen', version: '16.7.8', wda: false });
    const seen: string[] = [];
    const onPhone = (p: Phone) => p.serial === phone.udid && seen.push(p.state);
    fleet.on('phone', onPhone);
    await waitFor('device', async () => state(phone.udid) === 'device' || undefined, 15_000);
    fleet.off('phone', onPhone);
    expect(seen[0]).toBe('wda_unavailable');
    expect(phone.wdaRunning).toBe(true);
    const selectors = phone.testManager.received.map((r) => r.selector);
    console.log(selectors, lines);
  });
});
