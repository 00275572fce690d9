import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen, parseUsbmuxdAddress, type MuxEvent } from '../../src/main/engine/fleet/ios/usbmux.js';
import { WdaClient } from '../../src/main/engine/fleet/ios/wda-client.js';
import { NOTES, SETTINGS } from '../../src/sim/ios/index.js';
import { buildIpa } from '../support/app-fixtures.js';
import { ideviceToolOrSkip, ideviceToolsOrSkip, startIosBus, type IosBus } from '../support/ios-lab.js';
import { waitFor } from '../support/lab.js';

const run = promisify(execFile);
const basics = ideviceToolsOrSkip();
const diagnostics = ideviceToolOrSkip('idevicediagnostics', 'libimobiledevice-utils');
const syslog = ideviceToolOrSkip('idevicesyslog', 'libimobiledevice-utils');
const installer = ideviceToolOrSkip('ideviceinstaller', 'ideviceinstaller');

/** libimobiledevice's other tools against the simulated iPhone: restart, syslog, and installing through AFC. */
describe('simulated iPhone, driven by libimobiledevice tools', () => {
  let bus: IosBus;
  let dir: string;
  const env = () => ({ ...process.env, USBMUXD_SOCKET_ADDRESS: bus.address });

  beforeAll(async () => {
    bus = await startIosBus([{ name: 'Lab iPhone', restartMs: 1500 }]);
    dir = mkdtempSync(join(tmpdir(), 'benchtop-idevice-'));
  }, 30_000);
  afterAll(async () => {
    await bus?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it.runIf(basics && diagnostics)('idevicediagnostics restart: the phone detaches, comes back booted afresh, and answers again', async () => {
    const phone = bus.phones[0]!;
    const events: MuxEvent[] = [];
    const watcher = await listen(parseUsbmuxdAddress(bus.address), (e) => events.push(e));
    try {
      await waitFor('the attached phone', () => events.some((e) => e.type === 'attached'));
      const before = events.length;
      const bootedAt = phone.bootedAt;
      const { stdout } = await run('idevicediagnostics', ['-u', phone.udid, 'restart'], { env: env(), timeout: 15_000 });
      expect(stdout).toContain('Restarting device.');
      await waitFor('Detached', () => events.slice(before).some((e) => e.type === 'detached'), 3000);
      // Off the bus while it boots: libimobiledevice no longer lists it.
      expect((await run('idevice_id', ['-l'], { env: env(), timeout: 10_000 })).stdout).not.toContain(phone.udid);
      await waitFor('Attached again', () => events.slice(before).some((e) => e.type === 'attached' && e.udid === phone.udid), 5000);
      expect(events.slice(before).map((e) => e.type)).toEqual(['detached', 'attached']);
      expect(phone.bootCount).toBe(2);
      expect(phone.bootedAt).toBeGreaterThan(bootedAt);
      expect(phone.uptimeSeconds).toBeLessThan(2);
      // Booted afresh: the lock screen, and WebDriverAgent serving again (it was running before).
      expect(phone.board.locked).toBe(true);
      expect(phone.wdaRunning).toBe(true);
      const info = await run('ideviceinfo', ['-u', phone.udid, '-k', 'DeviceName'], { env: env(), timeout: 10_000 });
      expect(info.stdout.trim()).toBe('Lab iPhone');
      expect(phone.syslog.at(-1)).toMatch(/ kernel\[0\] <Notice>: Darwin Kernel booted: .* boot 2$/);
    } finally {
      watcher.close();
    }
  });

  it.runIf(basics && syslog)('idevicesyslog shows the line SpringBoard logs when WDA launches an app', async () => {
    const phone = bus.phones[0]!;
    const child = spawn('idevicesyslog', ['-u', phone.udid], { env: env() });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const wda = new WdaClient(parseUsbmuxdAddress(bus.address), phone.udid);
    try {
      await waitFor('idevicesyslog connected', () => out.includes('[connected]'), 10_000);
      await wda.command('POST', '/wda/apps/launch', { bundleId: NOTES });
      expect(phone.board.foreground).toBe(NOTES);
      const line = await waitFor('the launch line', () => out.split('\n').find((l) => l.includes(`Launching application ${NOTES}`)), 5000);
      // iOS's shape: time, process(library)[pid], level, message.
      expect(line).toMatch(/^\w{3} +\d+ \d\d:\d\d:\d\d .*SpringBoard\(FrontBoard\)\[58\] <Notice>: Launching application com\.apple\.mobilenotes$/);
      await wda.command('POST', '/wda/apps/terminate', { bundleId: NOTES });
      await waitFor('the terminate line', () => out.includes(`Application ${NOTES} terminated`), 5000);
    } finally {
      child.kill();
      await wda.close();
    }
  });

  it.runIf(basics && installer)('ideviceinstaller lists the apps, installs an IPA through AFC and installation_proxy, and uninstalls it', async () => {
    const phone = bus.phones[0]!;
    const ipa = join(dir, 'hello.ipa');
    writeFileSync(ipa, buildIpa({ bundleId: 'com.example.idevice', displayName: 'Idevice Hello', shortVersion: '3.4', build: '56' }));

    const listed = await run('ideviceinstaller', ['-u', phone.udid, '-l'], { env: env(), timeout: 20_000 });
    // User apps only, by default: the WDA runner, not Settings.
    expect(listed.stdout).toContain('com.facebook.WebDriverAgentRunner.xctrunner, "1", "WebDriverAgentRunner-Runner"');
    expect(listed.stdout).not.toContain(SETTINGS);
    expect(listed.stdout).not.toContain('com.example.idevice');

    const installed = await run('ideviceinstaller', ['-u', phone.udid, '-i', ipa], { env: env(), timeout: 30_000 });
    expect(installed.stdout).toContain("Installing 'com.example.idevice'");
    expect(installed.stdout).toMatch(/Install: Complete/);
    expect(phone.apps.get('com.example.idevice')).toMatchObject({ name: 'Idevice Hello', version: '3.4', build: '56', type: 'User' });
    // installd's own directories: a UUID for the bundle, another for the data container.
    expect(phone.apps.get('com.example.idevice')!.path).toMatch(/^\/private\/var\/containers\/Bundle\/Application\/[0-9A-F-]{36}\/Idevice Hello\.app$/);
    expect(phone.apps.get('com.example.idevice')!.container).toMatch(/^\/private\/var\/mobile\/Containers\/Data\/Application\/[0-9A-F-]{36}$/);

    const xml = await run('ideviceinstaller', ['-u', phone.udid, '-l', '-o', 'xml'], { env: env(), timeout: 20_000 });
    expect(xml.stdout).toContain('<string>com.example.idevice</string>');
    const all = await run('ideviceinstaller', ['-u', phone.udid, '-l', '-o', 'list_all'], { env: env(), timeout: 20_000 });
    expect(all.stdout).toContain(`${SETTINGS}, "1", "Settings"`);

    const removed = await run('ideviceinstaller', ['-u', phone.udid, '-U', 'com.example.idevice'], { env: env(), timeout: 20_000 });
    expect(removed.stdout).toMatch(/Uninstall: Complete/);
    expect(phone.apps.has('com.example.idevice')).toBe(false);
  });
});
