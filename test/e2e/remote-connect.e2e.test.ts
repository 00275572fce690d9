/**
 * "Use from your computer" on the phone page, in Chromium against a real engine and adb server: paste adbkey.pub,
 * open the phone for `adb connect`, copy the command, and see Debian adb (the user's own server and key) listed as
 * connected. Screenshots go to test-artifacts/e2e/remote-connect/.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { allocateInUse, adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';
import { client, OWNER_EMAIL, OWNER_PASSWORD } from '../support/engine.js';
import { remotePorts } from '../support/remote.js';
import { chromiumOrSkip, sharedChromium, logIn, originOf, snap, watchConsole, open } from './support/browser.js';

const ready = chromiumOrSkip() && adbOrSkip();
const SUITE = 'remote-connect';

describe.runIf(ready)('GUI: Use from your computer', () => {
  let lab: TestLab;
  let user: AdbServer;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  /** The session holding the phone (the first test allocates it; the second reopens it on the LAN). */
  let session: string;

  beforeAll(async () => {
    [lab, user, browser] = await Promise.all([
      startLab([{ model: 'Pixel 7', osVersion: '14' }], { remotePorts: remotePorts(3), remotePortRestSeconds: 1 }),
      startAdbServer(),
      sharedChromium(),
    ]);
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, permissions: ['clipboard-read', 'clipboard-write'] });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    errors = watchConsole(page);
  });
  afterAll(async () => {
    await browser?.close();
    await user?.stop();
    await lab?.stop();
  });

  it('adds the pasted key, opens the phone, copies `adb connect`, and lists Debian adb once it connects', async () => {
    const c = client(lab.engine.api);
    const token = await c.login();
    ({ session } = await allocateInUse(c, token, 'Pixel 7'));
    await logIn(page, originOf(lab.engine.api), OWNER_EMAIL, OWNER_PASSWORD, `/sessions/${session}`);
    const panel = page.getByRole('region', { name: 'Use from your computer' });
    await panel.waitFor();
    // No key yet: the button waits for one.
    expect(await panel.getByRole('button', { name: 'Open for adb connect' }).isDisabled()).toBe(true);

    const key = readFileSync(join(user.env.HOME!, '.android', 'adbkey.pub'), 'utf8');
    await panel.getByLabel('Paste adbkey.pub').fill(key);
    await panel.getByRole('button', { name: 'Add key' }).click();
    await panel.getByRole('list', { name: 'Your adb keys' }).getByText(/^[0-9A-F]{2}(:[0-9A-F]{2}){15}$/).waitFor();

    await panel.getByRole('button', { name: 'Open for adb connect' }).click();
    const command = await panel.locator('.command-line code').first().textContent();
    expect(command).toMatch(/^adb connect 127\.0\.0\.1:\d+$/);
    await panel.getByRole('button', { name: `Copy ${command}` }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(command);

    const address = command!.split(' ')[2]!;
    expect((await user.run(['connect', address])).stdout.toString()).toContain(`connected to ${address}`);
    await waitFor('the connection in the panel', async () => (await panel.getByRole('list', { name: 'Connected tools' }).getByText(/^127\.0\.0\.1:\d+ · key [0-9A-F:]{47} · since /).count()) === 1, 15_000);
    await snap(page, SUITE, '01-connected');

    await panel.getByRole('button', { name: 'Stop sharing' }).click();
    await panel.getByRole('button', { name: 'Open for adb connect' }).waitFor();
    await waitFor('adb to show offline', async () => (await user.run(['devices'])).stdout.toString().includes(`${address}\toffline`), 5000);
    expect(errors).toEqual([]);
  }, 60_000);

  it('lets the lab owner put remote connect on the LAN in Settings, with the warning, and the phone page then shows the LAN address', async () => {
    const c = client(lab.engine.api);
    const token = await c.login();
    await page.getByRole('link', { name: 'Settings' }).click();
    const section = page.getByRole('region', { name: 'Remote connect on the LAN' });
    await section.waitFor();
    expect(await section.textContent()).toContain('Anyone on the LAN can reach these ports');
    const toggle = section.getByRole('checkbox', { name: /adb connect straight to/ });
    expect(await toggle.isChecked()).toBe(false);
    await toggle.click();
    await section.getByRole('alert').waitFor();
    await waitFor('the switch to be on', async () => await toggle.isChecked());
    const { host } = (await c.call('GET', '/lab/settings', { token })).body.remoteConnectOnLan;
    expect(host).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    await snap(page, SUITE, '02-settings-lan');

    await open(page, `${originOf(lab.engine.api)}/sessions/${session}`);
    const panel = page.getByRole('region', { name: 'Use from your computer' });
    await panel.getByRole('button', { name: 'Open for adb connect' }).click();
    const command = await panel.locator('.command-line code').first().textContent();
    expect(command).toMatch(new RegExp(`^adb connect ${host.replaceAll('.', '\\.')}:\\d+$`));
    expect((await c.call('PATCH', '/lab/settings', { token, body: { remoteConnectOnLan: false } })).status).toBe(200);
    expect(errors).toEqual([]);
  }, 60_000);
});
