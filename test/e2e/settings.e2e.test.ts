/**
 * The lab owner's first week in Chromium: idle release, the longest reservation and how long test results' files are
 * kept set in Settings; a new API key
 * shown with how to use it; the whole lab's usage; and an iPhone's Apps tab that offers only the apps someone
 * installed (never iOS's own) for uninstall. Screenshots go to test-artifacts/e2e/settings/.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsbmuxdAddress } from '../../src/main/engine/fleet/ios/usbmux.js';
import { client, OWNER_EMAIL, OWNER_PASSWORD } from '../support/engine.js';
import { startIosBus, type IosBus } from '../support/ios-lab.js';
import { adbOrSkip, startLab, type TestLab } from '../support/lab.js';
import { axeViolations, chromiumOrSkip, sharedChromium, logIn, originOf, snap, watchConsole, open } from './support/browser.js';

const ready = chromiumOrSkip() && adbOrSkip();
const SUITE = 'settings';
const IPHONE = 'Team iPhone';

describe.runIf(ready)('GUI: settings, API keys, lab usage and an iPhone\'s apps', () => {
  let bus: IosBus;
  let lab: TestLab;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  let token: string;
  const c = () => client(lab.engine.api);

  beforeAll(async () => {
    bus = await startIosBus([{ name: IPHONE, version: '17.5.1', userApps: [{ bundleId: 'com.example.fieldnotes', name: 'Field Notes' }] }]);
    [lab, browser] = await Promise.all([startLab([], { usbmuxd: parseUsbmuxdAddress(bus.address) }), sharedChromium()]);
    const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    errors = watchConsole(page);
    token = await c().login();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await lab?.stop();
    await bus?.stop();
  });

  it('Settings: the owner sets idle release and the longest reservation; the lab takes them', async () => {
    await logIn(page, originOf(lab.engine.api), OWNER_EMAIL, OWNER_PASSWORD, '/settings');
    const sharing = page.getByRole('region', { name: 'Sharing the phones' });
    await sharing.getByLabel('Release an idle phone after (minutes, 0: never)').fill('7');
    await sharing.getByLabel('Longest reservation (hours)').fill('5');
    await sharing.getByRole('button', { name: 'Save sharing' }).click();
    await expect.poll(async () => (await c().call('GET', '/lab/settings', { token })).body).toMatchObject({ deviceIdleSeconds: 420, reservationMaxHours: 5 });
    await page.reload();
    await expect.poll(() => page.getByLabel('Release an idle phone after (minutes, 0: never)').inputValue()).toBe('7');
    expect(await page.getByLabel('Longest reservation (hours)').inputValue()).toBe('5');
    expect(await axeViolations(page)).toEqual([]);
    await snap(page, SUITE, '01-sharing-settings');
  });

  it("Settings: what test results' files take and how long they are kept; a result whose files went says so on its page", async () => {
    const created = await c().call('POST', '/test-results', { token, body: { name: 'nightly', status: 'passed' } });
    const body = new FormData();
    body.set('name', 'trace.zip');
    body.set('file', new Blob([new Uint8Array(3 * 1024)]), 'trace.zip');
    expect((await fetch(`${lab.engine.api}/test-results/${created.body.id}/assets`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body })).status).toBe(201);
    await page.reload();
    const files = page.getByRole('region', { name: "Test results' files" });
    await files.getByText(/^They take 3\.0 KB; the disk has [\d.]+ [KMGT]?B free\.$/).waitFor();
    await files.getByLabel('Keep each file for (days, 0: always)').fill('30');
    await files.getByLabel("WebDriver runs' videos").selectOption({ label: 'Only a run that does not pass keeps its video' });
    await files.getByRole('button', { name: 'Save' }).click();
    await files.getByRole('status').getByText('Saved: files older than 30 days are removed, from now on as they age; only a run that does not pass keeps its video.').waitFor();
    expect((await c().call('GET', '/lab/settings', { token })).body).toMatchObject({ testResultFiles: { keepDays: 30 }, webDriverVideo: 'retain-on-failure' });
    expect(await axeViolations(page)).toEqual([]);
    await snap(page, SUITE, '02-test-result-files');

    // A month and a day on, the hourly sweep removes the file; the result stays, and its page says when its files went.
    expect((await lab.engine.engine.services.files.sweep(Date.now() + 31 * 24 * 3600 * 1000)).testResults).toBe(1);
    await open(page, `${originOf(lab.engine.api)}/test-results/${created.body.id}`);
    await page.getByText(/^The lab removed this run's files on .+: it keeps test results' files for as long as its settings say\.$/).waitFor();
    expect(await page.getByText('No assets were uploaded.').count()).toBe(0);
    await open(page, `${originOf(lab.engine.api)}/settings`);
    await page.getByRole('region', { name: "Test results' files" }).getByText(/^They take 0 B;/).waitFor();
    expect(await files.getByRole('alert').count()).toBe(0);

    // A disk with 1.5 GB left (the lab's own answer, its free space changed on the way): the section warns.
    await page.route('**/api/v1/lab/settings', async (route) => {
      const settings = await (await route.fetch()).json();
      await route.fulfill({ json: { ...settings, testResultFiles: { ...settings.testResultFiles, diskFreeBytes: 1.5 * 1024 ** 3 } } });
    });
    await page.reload();
    await files.getByRole('alert').getByText("The lab's disk has under 2.0 GB free: once it is full, runs' videos and logs, and uploads, can no longer be stored. Keep files for fewer days, or free space on it.").waitFor();
    await page.unroute('**/api/v1/lab/settings');
  });

  it('Settings: a provider no sshd answers for is refused in words, and nothing is listed', async () => {
    await page.getByRole('button', { name: 'Add a provider' }).click();
    const form = page.getByRole('form', { name: 'Add a provider' });
    await form.getByLabel('Name').fill('gone');
    await form.getByLabel('Address').fill('127.0.0.1');
    await form.getByLabel('SSH port').fill('1');
    await form.getByLabel('User').fill('lab');
    await form.getByLabel('Password').fill('pw');
    await form.getByRole('button', { name: 'Read the host key' }).click();
    await form.getByRole('alert').getByText('No sshd answered at 127.0.0.1:1: connection refused at 127.0.0.1:1.').waitFor();
    expect(await page.getByRole('table', { name: 'Providers' }).count()).toBe(0);
    expect((await c().call('GET', '/lab/providers', { token })).body.data).toEqual([]);
    await form.getByRole('button', { name: 'Cancel' }).click();
    // The browser logs the refused request itself; nothing else went wrong.
    expect(errors.splice(0)).toEqual([expect.stringMatching(/status of 400/)]);
  });

  it('Organization: a new API key comes with the variables for CI, the reporter, mobilecli, MCP and the WebDriver URL', async () => {
    await open(page, `${originOf(lab.engine.api)}/organization`);
    await page.getByLabel('Key name').fill('ci');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = await page.getByLabel('The new API key').inputValue();
    expect(key).toMatch(/^mob_/);
    const origin = originOf(lab.engine.api);
    const snippet = (title: string) => page.getByLabel(`${title}: how to use the key`).innerText();
    expect(await snippet('CI and scripts (curl, the API)')).toBe(`export BENCHTOP=${origin}/api/v1\nexport KEY=${key}`);
    expect(await snippet('Playwright reporter')).toBe(`export BENCHTOP_URL=${origin}\nexport BENCHTOP_API_KEY=${key}`);
    expect(await snippet('mobilecli')).toContain(`export MOBILECLI_FLEET_URL=${origin.replace('http', 'ws')}/ws\nexport MOBILECLI_TOKEN=${key}`);
    expect(await snippet('MCP (Claude Code)')).toContain(`${origin}/mcp --header "Authorization: Bearer ${key}"`);
    expect(await snippet('WebDriver (Appium clients)')).toBe(`http://any:${key}@${new URL(origin).host}/wd/hub`);
    // The key works as the snippet says.
    expect((await c().call('GET', '/sessions', { token: key })).status).toBe(200);
    expect(await axeViolations(page)).toEqual([]);
    await snap(page, SUITE, '02-api-key-usage');
  });

  it('iPhone Apps tab: only the apps someone installed are listed with Uninstall…, never iOS\'s own', async () => {
    await open(page, `${originOf(lab.engine.api)}/fleet`);
    await page.getByRole('button', { name: new RegExp(`^Use this phone: ${IPHONE}`) }).click({ timeout: 20_000 });
    await page.waitForURL(/\/sessions\/[0-9a-f-]{36}$/);
    await page.getByRole('tab', { name: 'Apps', exact: true }).click();
    const apps = page.getByRole('list', { name: `Apps on ${IPHONE}` });
    // Named by the app's name now that an iPhone's list carries it; its bundle id is shown under the name.
    const fieldNotes = apps.getByRole('listitem').filter({ hasText: 'com.example.fieldnotes' });
    await fieldNotes.getByRole('button', { name: 'Uninstall…' }).waitFor();
    const listed = await apps.getByRole('listitem').allInnerTexts();
    expect(listed.join('\n')).not.toMatch(/com\.apple\./);
    expect(await apps.getByRole('button', { name: 'Uninstall…' }).count()).toBe(1);
    await snap(page, SUITE, '03-iphone-apps');
    // Asked anyway (through the API), a system app's uninstall is refused in a sentence, not the phone's raw answer.
    const sessionId = new URL(page.url()).pathname.split('/').pop()!;
    const udid = bus.phones[0]!.udid;
    const refused = await c().call('POST', `/sessions/${sessionId}/devices/${udid}/actions`, { token, body: { type: 'uninstallApp', packageName: 'com.apple.mobilesafari' } });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toEqual({ code: 'system_app', message: 'com.apple.mobilesafari is one of iOS\'s own apps: the iPhone does not let it be uninstalled.' });
  });

  it('Usage: the lab owner sees every organization\'s time on each phone', async () => {
    await open(page, `${originOf(lab.engine.api)}/usage`);
    const table = page.getByRole('table', { name: 'Usage by organization and phone' });
    await table.getByRole('row', { name: new RegExp(`Personal \\(${OWNER_EMAIL}\\).*${IPHONE}`) }).waitFor();
    expect(await axeViolations(page)).toEqual([]);
    await snap(page, SUITE, '04-lab-usage');
    expect(errors).toEqual([]);
  });
});
