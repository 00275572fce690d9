import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsbmuxdAddress } from '../../src/main/engine/fleet/ios/usbmux.js';
import { SETTINGS } from '../../src/sim/ios/springboard.js';
import { client, startEngine, type TestEngine } from '../support/engine.js';
import { startIosBus, type IosBus } from '../support/ios-lab.js';
import { remotePorts } from '../support/remote.js';
import { uploadReadyApp, waitFor } from '../support/lab.js';
import { buildIpa } from '../support/app-fixtures.js';
import { labSession } from '../support/webdriver.js';
import { startServerNamespace } from '../support/app-server-namespace.js';
import { netnsOrSkip } from '../support/provider/index.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * An iPhone through the lab's WebDriver endpoint: WebdriverIO, unchanged, with an API key; real Appium's XCUITest
 * driver behind the lab reaches the held iPhone's WebDriverAgent through its remote connection's WDA URL.
 */
describe('WebDriver for the lab: an iPhone through XCUITest', () => {
  let bus: IosBus;
  let engine: TestEngine;
  let c: ReturnType<typeof client>;
  let owner: string;
  let key: string;

  beforeAll(async () => {
    bus = await startIosBus([{ name: 'Lab iPhone', version: '17.5.1' }]);
    engine = await startEngine({ usbmuxd: parseUsbmuxdAddress(bus.address), adb: null, remotePorts: remotePorts(6), remotePortRestSeconds: 1 });
    c = client(engine.api);
    owner = await c.login();
    key = await c.createKey(owner);
    await waitFor('the iPhone in the fleet', async () => (await c.call('GET', '/fleet/devices', { token: owner })).body.data?.some((d: { state: string }) => d.state === 'device'), 20_000);
  }, 60_000);

  afterAll(async () => {
    await engine?.stop();
    await bus?.stop();
  });

  it('finds and clicks by accessibility id, reads the page source, and keeps the run', async () => {
    const phone = bus.phones[0]!;
    // A version prefix, as a suite asks: the lab gives the driver the phone's exact one.
    const driver = await labSession(engine.api, key, { platformName: 'iOS', 'appium:platformVersion': '17', 'benchtop:options': { name: 'iphone run' } });
    const caps = driver.capabilities as Record<string, unknown>;
    expect(caps['appium:udid']).toBe(phone.udid);
    expect(caps['benchtop:device']).toBe('Lab iPhone');
    await (await driver.$('~Settings')).click();
    expect(phone.board.foreground).toBe(SETTINGS);
    expect(await driver.getPageSource()).toContain('<XCUIElementTypeApplication type="XCUIElementTypeApplication" name="Settings"');
    await driver.deleteSession();
    expect(phone.wda.sessionId).toBeUndefined();

    const result = await waitFor('the test result', async () => {
      const r = ((await c.call('GET', '/test-results', { token: owner })).body.data as Array<{ id: string; name: string; status: string }>).find((x) => x.name === 'iphone run');
      return r && r.status !== 'running' ? r : undefined;
    }, 30_000);
    expect(result.status).toBe('passed');
    const assets = (await c.call('GET', `/test-results/${result.id}/assets`, { token: owner })).body.data as Array<{ name: string }>;
    expect(assets.map((a) => a.name).sort()).toEqual(['appium.log', 'commands.log', 'screenshot.png', 'syslog.txt', 'video.mp4']);
  }, 120_000);

  it('installs an app stored in the lab (lab://files/<id>) itself and starts it by its bundle id (issue 43.1)', async () => {
    const phone = bus.phones[0]!;
    const fileId = await uploadReadyApp(c, owner, buildIpa({ bundleId: 'com.example.ipa', displayName: 'Stored IPA', shortVersion: '1.0', build: '1' }), 'stored.ipa');
    const driver = await labSession(engine.api, key, { platformName: 'iOS', 'appium:app': `lab://files/${fileId}` });
    expect(phone.board.foreground).toBe('com.example.ipa');
    const caps = driver.capabilities as Record<string, unknown>;
    expect(caps).toMatchObject({ 'appium:udid': phone.udid, bundleId: 'com.example.ipa' });
    expect(JSON.stringify(caps)).not.toContain('webDriverAgentUrl');
    await driver.deleteSession();
  }, 120_000);

  it.skipIf(!netnsOrSkip())('downloads an app named by URL (an .ipa on a server that is not the lab box) and starts it by its bundle id', async () => {
    const phone = bus.phones[0]!;
    const dir = mkdtempSync(join(tmpdir(), 'benchtop-ipa-url-'));
    writeFileSync(join(dir, 'app.ipa'), buildIpa({ bundleId: 'com.example.urlipa', displayName: 'URL IPA', shortVersion: '2.0', build: '7' }));
    const net = await startServerNamespace(dir, 10_000_000);
    try {
      const driver = await labSession(engine.api, key, { platformName: 'iOS', 'appium:app': `http://${net.ns}:8080/app.ipa` });
      expect(phone.board.foreground).toBe('com.example.urlipa');
      expect(driver.capabilities as Record<string, unknown>).toMatchObject({ 'appium:udid': phone.udid, bundleId: 'com.example.urlipa' });
      await driver.deleteSession();
      // Downloaded once, into the organization's files.
      const hits = (await (await fetch(`http://${net.ns}:8080/hits`)).json()) as Array<{ url: string }>;
      expect(hits.filter((h) => h.url === '/app.ipa')).toHaveLength(1);
      const files = (await c.call('GET', '/files', { token: owner })).body.data as Array<{ filename: string }>;
      expect(files.some((f) => f.filename === 'app.ipa')).toBe(true);
    } finally {
      net.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
