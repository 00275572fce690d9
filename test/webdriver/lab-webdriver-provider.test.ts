import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../support/engine.js';
import { adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';
import { netnsOrSkip, startNetnsProvider, type NetnsProvider } from '../support/provider/index.js';
import { remotePorts } from '../support/remote.js';
import { labSession, NO_VIDEO } from '../support/webdriver.js';

const ready = adbOrSkip() && netnsOrSkip();

/**
 * A phone on a provider (another box, here a network namespace reached only over SSH) through the lab's WebDriver
 * endpoint, exactly as a local one: Appium reaches it through its remote-connect bridge, whichever host it is on.
 */
describe.skipIf(!ready)('WebDriver for the lab: a phone on a provider', () => {
  let provider: NetnsProvider;
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;
  let key: string;

  beforeAll(async () => {
    [provider, lab] = await Promise.all([
      startNetnsProvider(0, { phones: [{ port: 25001, options: { model: 'Remote Pixel', osVersion: '14' } }] }),
      startLab([], { remotePorts: remotePorts(6), remotePortRestSeconds: 1, providerCheckMs: 300, providerProbeTimeoutMs: 1000, providerBackoffMaxMs: 1000 }),
    ]);
    c = client(lab.engine.api);
    owner = await c.login();
    key = await c.createKey(owner);
    const added = await c.call('POST', '/lab/providers', { token: owner, body: provider.body() });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    await waitFor('the provider\'s phone in the fleet', async () =>
      ((await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<{ name: string; state: string }>).some((p) => p.name === 'Remote Pixel' && p.state === 'device'), 30_000);
  }, 90_000);

  afterAll(async () => {
    await lab?.stop();
    await provider?.stop();
  });

  it('drives Settings on it by xpath, as on a local phone', async () => {
    const driver = await labSession(lab.engine.api, key, { platformName: 'Android', 'appium:deviceName': 'Remote Pixel', 'benchtop:options': NO_VIDEO });
    expect((driver.capabilities as Record<string, unknown>)['appium:udid']).toBe(provider.serials[0]);
    await driver.activateApp('com.android.settings');
    const wifi = await driver.$('//android.widget.TextView[@text="Wi-Fi"]');
    await wifi.click();
    expect(await driver.getPageSource()).toContain('text="Wi-Fi"');
    expect(provider.adb('-s', provider.serials[0]!, 'shell', 'dumpsys', 'activity', 'activities')).toContain('com.android.settings');
    await driver.deleteSession();
  }, 120_000);
});
