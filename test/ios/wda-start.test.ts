import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IosFleet } from '../../src/main/engine/fleet/ios/ios-fleet.js';
import { parseUsbmuxdAddress } from '../../src/main/engine/fleet/ios/usbmux.js';
import type { Phone } from '../../src/main/engine/fleet/types.js';
import type { SimulatedIPhone } from '../../src/sim/ios/index.js';
import { client, startEngine, type TestEngine } from '../support/engine.js';
import { startIosBus, type IosBus } from '../support/ios-lab.js';
import { waitFor } from '../support/lab.js';

const WDA = 'com.facebook.WebDriverAgentRunner.xctrunner';
const APPIUM_XCTEST = fileURLToPath(new URL('../support/ios-host/appium-xctest.mjs', import.meta.url));
/** What Xcode's launch of a test runner sends, in order: the control session, the execution session, the launch, the authorization, the plan. */
const XCTEST_LAUNCH = [
  '_IDE_initiateControlSessionWithProtocolVersion:',
  '_IDE_initiateSessionWithIdentifier:forClient:atPath:protocolVersion:',
  'processIdentifierForBundleIdentifier:',
  'launchSuspendedProcessWithDevicePath:bundleIdentifier:environment:arguments:options:',
  'startObservingPid:',
  '_IDE_authorizeTestSessionWithProcessID:',
  '_IDE_startExecutingTestPlanWithProtocolVersion:',
];
const launchSelectors = (phone: SimulatedIPhone) => phone.testManager.received.map((r) => r.selector).filter((s) => s !== '_requestChannelWithCode:identifier:');

describe('the fleet starts an installed WebDriverAgent runner through testmanagerd (iOS < 17, no Mac)', () => {
  let bus: IosBus;
  let fleet: IosFleet;
  const lines: string[] = [];

  beforeAll(async () => {
    bus = await startIosBus();
    fleet = new IosFleet(parseUsbmuxdAddress(bus.address), (line) => lines.push(line), { bundleId: WDA, xcrun: null });
    await fleet.start();
  }, 30_000);
  afterAll(async () => {
    await fleet?.stop();
    await bus?.stop();
  });
  const state = (udid: string) => fleet.get(udid)?.state;
  const problemOf = (udid: string) => waitFor(`${udid}'s problem`, async () => (fleet.wdaProblem(udid)?.includes('starting') ? undefined : fleet.wdaProblem(udid)), 15_000);

  it('iOS 16 with WDA installed but stopped: starts it (XCTest over DTX), and the phone turns from wda_unavailable to device', async () => {
    const phone = await bus.plug({ name: 'Sixteen', version: '16.7.8', wda: false });
    const seen: string[] = [];
    // Each state once: a row's steps change while it stays wda_unavailable (the start under way), which is no new state.
    const onPhone = (p: Phone) => p.serial === phone.udid && seen.at(-1) !== p.state && seen.push(p.state);
    fleet.on('phone', onPhone);
    await waitFor('device', async () => state(phone.udid) === 'device' || undefined, 15_000);
    fleet.off('phone', onPhone);
    expect(seen).toEqual(['wda_unavailable', 'device']);
    expect(phone.wdaRunning).toBe(true);
    expect(launchSelectors(phone)).toEqual(XCTEST_LAUNCH);
    // The configuration the runner read is in its container's tmp, named after the session.
    const tmp = phone.containers.get(WDA)!.fs.list('/tmp')!;
    expect(tmp).toHaveLength(1);
    expect(tmp[0]).toMatch(/^WebDriverAgentRunner-[0-9A-F-]{36}\.xctestconfiguration$/);
    expect(fleet.wdaProblem(phone.udid)).toBeUndefined();
    expect(lines.some((l) => l.includes(phone.udid) && /started through testmanagerd in \d+ ms/.test(l))).toBe(true);

    // The run lives on the engine's testmanagerd sessions: pulling the phone ends them, and WDA with them.
    phone.unplug();
    await waitFor('WDA stopped', async () => !phone.wdaRunning || undefined, 5000);
    await waitFor('no open service connections', async () => phone.serviceConnections.size === 0 || undefined, 5000);
  });

  it('iOS 17 with no Mac: stays wda_unavailable with the exact steps, and asks the phone nothing', async () => {
    const phone = await bus.plug({ name: 'Seventeen', version: '17.5.1', wda: false });
    const problem = await problemOf(phone.udid);
    expect(state(phone.udid)).toBe('wda_unavailable');
    expect(problem).toContain('iOS 17.5.1');
    expect(problem).toContain(`xcrun devicectl device process launch --device ${phone.udid} ${WDA}`);
    expect(problem).toContain('RemoteXPC');
    expect(phone.testManager.received).toEqual([]);
    expect(phone.wdaRunning).toBe(false);
  });

  it('a phone without the runner installed: wda_unavailable naming the bundle id, with the install steps', async () => {
    const phone = await bus.plug({ name: 'Bare', version: '16.7.8', wda: false, wdaInstalled: false });
    const problem = await problemOf(phone.udid);
    expect(state(phone.udid)).toBe('wda_unavailable');
    expect(problem).toContain(`${WDA} is not installed`);
    expect(problem).toContain('xcodebuild -project WebDriverAgent.xcodeproj');
    expect(problem).toContain('BENCHTOP_WDA_BUNDLE_ID');
  });

  it('the phone refuses the launch midway: wda_unavailable with its reason, no crash, no connection left open', async () => {
    const phone = await bus.plug({ name: 'Untrusted', version: '16.7.8', wda: false });
    phone.launchFailure = 'Unable to launch com.facebook.WebDriverAgentRunner.xctrunner because it has an invalid code signature, inadequate entitlements or its profile has not been explicitly trusted by the user.';
    const problem = await problemOf(phone.udid);
    expect(problem).toContain('refused to launch');
    expect(problem).toContain('its profile has not been explicitly trusted by the user');
    expect(launchSelectors(phone)).toContain('launchSuspendedProcessWithDevicePath:bundleIdentifier:environment:arguments:options:');
    expect(launchSelectors(phone)).not.toContain('_IDE_startExecutingTestPlanWithProtocolVersion:');
    await waitFor('no open service connections', async () => phone.serviceConnections.size === 0 || undefined, 5000);
    expect(state(phone.udid)).toBe('wda_unavailable');
    // Backed off: no second try at once.
    const launches = launchSelectors(phone).length;
    await new Promise((r) => setTimeout(r, 600));
    expect(launchSelectors(phone).length).toBe(launches);
  });

  it('without the Developer Disk Image mounted: says so, with how to mount it', async () => {
    const phone = await bus.plug({ name: 'Rebooted', version: '16.7.8', wda: false, developerImage: false });
    const problem = await problemOf(phone.udid);
    expect(problem).toContain('Developer Disk Image is not mounted');
    expect(phone.serviceConnections.size).toBe(0);
  });

  it('a running WDA is used as it is: nothing is launched', async () => {
    const phone = await bus.plug({ name: 'Running', version: '16.7.8', wda: true });
    await waitFor('device', async () => state(phone.udid) === 'device' || undefined, 10_000);
    expect(phone.testManager.received).toEqual([]);
  });
});

describe('the fleet starts WDA with `xcrun devicectl` on iOS 17+ (a scripted xcrun, the simulated phone launching)', () => {
  let bus: IosBus;
  let fleet: IosFleet;

  beforeAll(async () => {
    bus = await startIosBus();
    fleet = new IosFleet(parseUsbmuxdAddress(bus.address), () => undefined, { bundleId: WDA, xcrun: await bus.xcrun() });
    await fleet.start();
  }, 30_000);
  afterAll(async () => {
    await fleet?.stop();
    await bus?.stop();
  });

  it('iOS 17 with WDA stopped: devicectl launches the runner and the phone becomes device', async () => {
    const phone = await bus.plug({ name: 'Seventeen', version: '17.5.1', wda: false });
    await waitFor('device', async () => fleet.get(phone.udid)?.state === 'device' || undefined, 15_000);
    expect(phone.wdaRunning).toBe(true);
    expect(phone.testManager.pidOf(WDA)).toBeGreaterThan(0);
    // CoreDevice, not lockdown's testmanagerd.
    expect(phone.testManager.received).toEqual([]);
  });

  it('iOS 17 without the runner: devicectl fails and the phone shows why', async () => {
    const phone = await bus.plug({ name: 'Bare', version: '17.5.1', wda: false, wdaInstalled: false });
    const problem = await waitFor('problem', async () => (fleet.wdaProblem(phone.udid)?.includes('starting') ? undefined : fleet.wdaProblem(phone.udid)), 15_000);
    expect(problem).toContain(`xcrun devicectl could not launch ${WDA}`);
    expect(problem).toContain('is not installed');
    expect(fleet.get(phone.udid)?.state).toBe('wda_unavailable');
  });

  it('iOS 16 on a Mac still goes through testmanagerd', async () => {
    const phone = await bus.plug({ name: 'Sixteen', version: '16.7.8', wda: false });
    await waitFor('device', async () => fleet.get(phone.udid)?.state === 'device' || undefined, 15_000);
    expect(launchSelectors(phone)).toEqual(XCTEST_LAUNCH);
  });
});

describe('an iPhone whose WDA was stopped is allocatable once the engine started it', () => {
  let bus: IosBus;
  let engine: TestEngine;

  beforeAll(async () => {
    bus = await startIosBus([{ name: 'Lab iPhone', version: '16.7.8', wda: false }]);
    engine = await startEngine({ usbmuxd: parseUsbmuxdAddress(bus.address), xcrun: null });
  }, 60_000);
  afterAll(async () => {
    await engine?.stop();
    await bus?.stop();
  });

  it('attach -> available -> allocated to in_use, driven through the WDA the engine started', async () => {
    const c = client(engine.api);
    const owner = await c.login();
    const phone = bus.phones[0]!;
    await waitFor('device', async () => {
      const list = (await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<{ serial: string; state: string }>;
      return list.find((d) => d.serial === phone.udid && d.state === 'device');
    }, 20_000);
    const session = (await c.call('POST', '/sessions', { token: owner })).body.id as string;
    const r = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'ios' }] } });
    expect(r.status).toBe(201);
    const device = await waitFor('in_use', async () => {
      const d = (await c.call('GET', `/sessions/${session}/devices`, { token: owner })).body.data.find((x: { id: string }) => x.id === r.body.id);
      return d?.status === 'in_use' ? d : undefined;
    }, 15_000);
    expect(device.info.serial).toBe(phone.udid);
    const shot = await fetch(`${engine.api}/sessions/${session}/devices/${phone.udid}/screenshot`, { headers: { authorization: `Bearer ${owner}` } });
    expect(shot.status).toBe(200);
  });
});

describe("the simulated iPhone's XCTest services against appium-ios-device's own Xctest (a third-party client)", () => {
  let bus: IosBus;

  beforeAll(async () => {
    bus = await startIosBus([{ name: 'Appium target', version: '16.7.8', wda: false }]);
  }, 30_000);
  afterAll(async () => {
    await bus?.stop();
  });

  it('Xctest.start() runs WDA on the phone; ending its process ends the run', async () => {
    const phone = bus.phones[0]!;
    // Xctest reaches usbmuxd only at its default address, which this variable sets (libusbmuxd's convention).
    const child = spawn(process.execPath, [APPIUM_XCTEST, phone.udid, WDA], { env: { ...process.env, USBMUXD_SOCKET_ADDRESS: bus.address } });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    try {
      await waitFor('Xctest started', async () => (out.includes('started') ? true : child.exitCode !== null ? Promise.reject(new Error(out)) : undefined), 20_000);
      expect(phone.wdaRunning).toBe(true);
      expect(launchSelectors(phone)).toEqual(XCTEST_LAUNCH);
    } finally {
      child.kill('SIGTERM');
    }
    await waitFor('WDA stopped', async () => !phone.wdaRunning || undefined, 5000);
  }, 30_000);
});
