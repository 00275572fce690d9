import { remote } from 'webdriverio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../support/engine.js';
import { remotePorts } from '../support/remote.js';
import { adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';

/**
 * The lab's WebDriver endpoint (/wd/hub) driven by WebdriverIO, unchanged, as a suite points it at a cloud: an API key
 * in the URL's credentials, capabilities that choose the phone, and real Appium behind the lab.
 */

const hasAdb = adbOrSkip();

describe.skipIf(!hasAdb)('WebDriver for the lab: WebdriverIO against /wd/hub with Android phones', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;
  let key: string;
  let port: number;

  beforeAll(async () => {
    lab = await startLab(
      [
        { model: 'Pixel 8', osVersion: '14' },
        { model: 'Pixel 7', osVersion: '13' },
      ],
      { remotePorts: remotePorts(8), remotePortRestSeconds: 1 },
    );
    c = client(lab.engine.api);
    owner = await c.login();
    key = await c.createKey(owner);
    port = Number(new URL(lab.engine.api).port);
  }, 60_000);

  afterAll(async () => {
    await lab?.stop();
  });

  const session = (capabilities: Record<string, unknown>, apiKey = key) =>
    remote({
      protocol: 'http',
      hostname: '127.0.0.1',
      port,
      path: '/wd/hub',
      user: 'ci',
      key: apiKey,
      logLevel: 'silent',
      connectionRetryCount: 0,
      connectionRetryTimeout: 120_000,
      capabilities: { platformName: 'Android', 'appium:automationName': 'UiAutomator2', ...capabilities } as WebdriverIO.Capabilities,
    });

  it('drives Settings on the phone the capabilities chose, and keeps the run as a test result', async () => {
    const started = performance.now();
    const driver = await session({ 'appium:platformVersion': '14', 'benchtop:options': { name: 'settings smoke', build: '42' } });
    console.log(`session start through the lab: ${(performance.now() - started).toFixed(0)} ms`);
    const caps = driver.capabilities as Record<string, unknown>;
    expect(caps['appium:udid']).toBe(lab.serials[0]);
    expect(caps['benchtop:device']).toBe('Pixel 8');
    await driver.activateApp('com.android.settings');
    const wifi = await driver.$('//android.widget.TextView[@text="Wi-Fi"]');
    expect(await wifi.getText()).toBe('Wi-Fi');
    await wifi.click();
    expect(await driver.getPageSource()).toContain('<hierarchy');
    expect((await driver.takeScreenshot()).length).toBeGreaterThan(1000);
    await driver.execute('benchtop: status', { status: 'passed', reason: 'all good' });
    await driver.deleteSession();
    const result = await waitFor('the test result to end', async () => {
      const list = (await c.call('GET', '/test-results', { token: owner })).body.data as Array<{ id: string; status: string; name: string }>;
      const r = list.find((x) => x.name === 'settings smoke');
      return r && r.status !== 'running' ? r : undefined;
    }, 30_000);
    expect(result.status).toBe('passed');
    const assets = (await c.call('GET', `/test-results/${result.id}/assets`, { token: owner })).body.data as Array<{ name: string; size: number }>;
    console.log(assets);
    expect(assets.map((a) => a.name).sort()).toEqual(['appium.log', 'commands.log', 'logcat.txt', 'screenshot.png', 'video.mp4']);
  }, 180_000);
});
