import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { afcService, appiumIosDevice, installationProxy, parseUsbmuxdAddress, readLockdownValues, usbmuxdSocket } from '../../src/main/engine/fleet/ios/usbmux.js';
import { buildIpa } from '../support/app-fixtures.js';
import { ideviceToolsOrSkip, startIosBus, type IosBus } from '../support/ios-lab.js';

const run = promisify(execFile);
const toolsPresent = ideviceToolsOrSkip();


describe('simulated iPhone, read by third-party clients', () => {
  let bus: IosBus;
  // appium-ios-device's services take an explicit usbmuxd socket, so no environment variable is shared.
  const aid = appiumIosDevice() as any;
  const socket = () => usbmuxdSocket(parseUsbmuxdAddress(bus.address));

  beforeAll(async () => {
    bus = await startIosBus([{ name: 'Ana’s iPhone', version: '17.5.1', battery: 64 }, { name: 'Untrusted', trusted: false }]);
  }, 30_000);
  afterAll(() => bus?.stop());

  const env = () => ({ ...process.env, USBMUXD_SOCKET_ADDRESS: bus.address });

  it.runIf(toolsPresent)('idevice_id -l lists both phones through USBMUXD_SOCKET_ADDRESS', async () => {
    const { stdout } = await run('idevice_id', ['-l'], { env: env(), timeout: 10_000 });
    expect(stdout.trim().split('\n').sort()).toEqual(bus.phones.map((p) => p.udid).sort());
  });

  it.runIf(toolsPresent)('ideviceinfo reads a trusted phone over a TLS lockdown session, with the battery domain', async () => {
    const [phone] = bus.phones;
    const { stdout } = await run('ideviceinfo', ['-u', phone!.udid], { env: env(), timeout: 20_000 });
    expect(stdout).toContain(`UniqueDeviceID: ${phone!.udid}`);
    expect(stdout).toContain('ProductVersion: 17.5.1');
    expect(stdout).toContain('ProductType: iPhone14,6');
    const battery = await run('ideviceinfo', ['-u', phone!.udid, '-q', 'com.apple.mobile.battery', '-k', 'BatteryCurrentCapacity'], { env: env(), timeout: 20_000 });
    expect(battery.stdout.trim()).toBe('64');
  });

  it.runIf(toolsPresent)('ideviceinfo fails on a phone that has not trusted this computer', async () => {
    const untrusted = bus.phones[1]!;
    const error = await run('ideviceinfo', ['-u', untrusted.udid], { env: env(), timeout: 20_000 }).then(() => undefined, (e: { code: number; stderr: string }) => e);
    expect(error?.code).not.toBe(0);
    expect(error?.stderr).toMatch(/Pairing dialog response pending|-19/i);
    // Without a session, only the public values: ideviceinfo -s (simple) reads them unpaired.
    const simple = await run('ideviceinfo', ['-u', untrusted.udid, '-s', '-k', 'DeviceName'], { env: env(), timeout: 20_000 });
    expect(simple.stdout.trim()).toBe('Untrusted');
  });

  it('appium-ios-device lists, reads values in a session, browses apps, stages and installs an IPA', async () => {
    const [phone] = bus.phones;
    const udid = phone!.udid;
    const mux = new aid.Usbmux(await socket());
    const devices = await mux.listDevices();
    mux.close();
    expect(devices.map((d: { Properties: { SerialNumber: string } }) => d.Properties.SerialNumber).sort()).toEqual(bus.phones.map((p) => p.udid).sort());

    const values = await readLockdownValues(parseUsbmuxdAddress(bus.address), udid, [
      { Key: 'DeviceName' },
      { Domain: 'com.apple.mobile.battery', Key: 'BatteryCurrentCapacity' },
    ]);
    expect(values).toEqual(['Ana’s iPhone', 64]);

    const afc = await afcService(parseUsbmuxdAddress(bus.address), udid);
    await afc.createDirectory('PublicStaging');
    const ipa = buildIpa({ bundleId: 'com.example.hello', displayName: 'Hello', shortVersion: '2.1', build: '7' });
    const stream = await afc.createWriteStream('PublicStaging/hello.ipa', { autoDestroy: true });
    stream.end(ipa);
    await once(stream, 'finish');
    expect((await afc.getFileInfo('PublicStaging/hello.ipa')).size).toBe(ipa.length);
    afc.close();

    const proxy = await installationProxy(parseUsbmuxdAddress(bus.address), udid);
    const progress = await proxy.installApplication('PublicStaging/hello.ipa', { PackageType: 'Developer' });
    expect(progress.some((m: { PercentComplete?: number }) => m.PercentComplete === 50)).toBe(true);
    expect(progress.at(-1)).toEqual({ Status: 'Complete' });
    proxy.close();
    const again = await installationProxy(parseUsbmuxdAddress(bus.address), udid);
    const apps = await again.listApplications({ applicationType: 'User' });
    expect(apps['com.example.hello']).toMatchObject({ CFBundleShortVersionString: '2.1', CFBundleVersion: '7', CFBundleDisplayName: 'Hello' });
    await again.uninstallApplication('com.example.hello');
    again.close();
    expect(phone!.apps.has('com.example.hello')).toBe(false);
  });

  it('WebDriverAgent answers through a usbmuxd Connect to port 8100, and a closed port is refused', async () => {
    const mux = new aid.Usbmux(await socket());
    const [device] = await mux.listDevices();
    await expect(mux.connect(device.DeviceID, 8200)).rejects.toThrow(/refused/);
    const tunnel = await mux.connect(device.DeviceID, 8100);
    tunnel.resume();
    tunnel.write('GET /status HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    let text = '';
    tunnel.on('data', (d: Buffer) => (text += d.toString()));
    await once(tunnel, 'end');
    expect(text).toMatch(/^HTTP\/1.1 200/);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).value.ready).toBe(true);
  });
});
