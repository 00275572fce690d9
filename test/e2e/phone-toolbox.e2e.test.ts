/**
 * Issue 26 in Chromium, against a real engine, adb server and simulated phones: the Fleet and the phone page at
 * 1024x768 (the panel beside the phone, the Use button whole, focus on the new page), the toolbox (shell, files,
 * apps, recording, PNG screenshot), logcat (no line lost across a pause, following after a burst, back after a
 * Restart), a composed ü reaching the phone, and axe-core on every tab. Screenshots at 1024x768 and 1440x900 go to
 * test-artifacts/e2e/phone-toolbox/.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApk } from '../../src/sim/android/apk.js';
import { client, OWNER_EMAIL, OWNER_PASSWORD } from '../support/engine.js';
import { adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';
import { mp4Boxes } from '../support/mp4-boxes.js';
import { axeViolations, chromiumOrSkip, sharedChromium, logIn, originOf, watchConsole, open } from './support/browser.js';

const ready = chromiumOrSkip() && adbOrSkip();
const SUITE = 'phone-toolbox';
const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'e2e', SUITE);
const PHONE = { model: 'Pixel 7', osVersion: '14', sdk: 34, width: 1080, height: 2400, density: 420 };
const APP = 'com.benchtop.e2e.toolbox';

describe.runIf(ready)('GUI: the phone page\'s toolbox, logcat and layout (issue 26)', () => {
  let lab: TestLab;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  let sessionId: string;
  let serial: string;
  let token: string;
  const c = () => client(lab.engine.api);
  const phone = () => lab.phone(serial);
  const image = () => page.getByRole('img', { name: 'Screen of Pixel 7' });
  const tab = (name: string) => page.getByRole('tab', { name, exact: true });
  const act = (body: unknown) => c().call('POST', `/sessions/${sessionId}/devices/${encodeURIComponent(serial)}/actions`, { token, body });
  const snapViewport = async (name: string) => {
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });
  };
  const download = async (click: () => Promise<void>) => {
    const [file] = await Promise.all([page.waitForEvent('download'), click()]);
    return { name: file.suggestedFilename(), data: readFileSync((await file.path())!) };
  };
  const axe = async (where: string) => expect(await axeViolations(page), where).toEqual([]);

  beforeAll(async () => {
    [lab, browser] = await Promise.all([startLab([PHONE, { model: 'Galaxy S21', osVersion: '12' }]), sharedChromium()]);
    const context = await browser.newContext({ viewport: { width: 1024, height: 768 }, acceptDownloads: true });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    errors = watchConsole(page);
    token = await c().login();
  });
  afterAll(async () => {
    await browser?.close();
    await lab?.stop();
  });

  it('at 1024x768 the Fleet shows serials on one line and the Use button whole; the new page takes the focus', async () => {
    await logIn(page, originOf(lab.engine.api), OWNER_EMAIL, OWNER_PASSWORD, '/fleet');
    const phones = page.getByRole('table', { name: 'Phones' });
    const use = phones.getByRole('button', { name: /^Use this phone: Pixel 7/ });
    await use.waitFor();
    const whole = await use.evaluate((b) => ({ fits: b.scrollWidth <= b.clientWidth, right: b.getBoundingClientRect().right, text: b.textContent }));
    expect(whole).toMatchObject({ fits: true, text: 'Use this phone' });
    expect(whole.right).toBeLessThanOrEqual(1024);
    const serialCell = phones.locator('code').first();
    const lineHeight = await serialCell.evaluate((el) => parseFloat(getComputedStyle(el).lineHeight) || 18);
    expect((await serialCell.boundingBox())!.height).toBeLessThan(lineHeight * 1.6);
    await axe('fleet at 1024');
    await mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, '01-fleet-1024x768.png') });

    await use.click();
    await page.waitForURL(/\/sessions\/[0-9a-f-]{36}$/);
    sessionId = page.url().split('/').pop()!;
    await image().waitFor({ timeout: 30_000 });
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');
    serial = (await c().call('GET', `/sessions/${sessionId}/devices`, { token })).body.data[0].info.serial;
  });

  it('at 1024x768 the side panel is beside the phone, not below it', async () => {
    await expect.poll(async () => Number(await image().getAttribute('data-frames')), { timeout: 20_000 }).toBeGreaterThan(0);
    const screen = (await image().boundingBox())!;
    const side = (await page.getByRole('complementary', { name: /Pixel 7: details/ }).boundingBox())!;
    expect(side.x).toBeGreaterThanOrEqual(screen.x + screen.width);
    expect(side.y).toBeLessThan(screen.y + screen.height / 2);
    expect(side.width).toBeGreaterThanOrEqual(300);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1024);
    await snapViewport('02-phone-1024x768');
  });

  it('Shell: getprop typed into the terminal is answered by the phone', async () => {
    // xterm.js (most of the GUI's weight) comes with the first terminal opened, not with the phone's page.
    const terminalLoaded = () => page.evaluate(() => performance.getEntriesByType('resource').some((r) => /\/assets\/terminal-[\w-]+\.js$/.test(r.name)));
    expect(await terminalLoaded()).toBe(false);
    await tab('Shell').click();
    const terminal = page.getByRole('region', { name: 'Shell on Pixel 7' });
    await terminal.waitFor();
    expect(await terminalLoaded()).toBe(true);
    await expect.poll(() => terminal.innerText()).toContain('$');
    await terminal.click();
    await page.keyboard.type('getprop ro.product.model');
    await page.keyboard.press('Enter');
    await expect.poll(() => terminal.innerText()).toMatch(/getprop ro\.product\.model\s+Pixel 7/);
    await axe('shell tab');
  });

  it('Files: an upload is listed, and downloads with the same bytes', async () => {
    await tab('Files').click();
    const content = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7) % 256));
    await page.getByLabel('Files to upload to /sdcard').setInputFiles({ name: 'e2e-upload.bin', mimeType: 'application/octet-stream', buffer: content });
    const table = page.getByRole('table', { name: 'Files in /sdcard' });
    await table.getByRole('row', { name: /e2e-upload\.bin/ }).waitFor();
    expect(phone().readFile('/sdcard/e2e-upload.bin')?.equals(content)).toBe(true);
    const got = await download(() => table.getByRole('button', { name: 'Download e2e-upload.bin' }).click());
    expect(got.name).toBe('e2e-upload.bin');
    expect(got.data.equals(content)).toBe(true);
    await table.getByRole('button', { name: 'Download/' }).click();
    await page.getByRole('table', { name: 'Files in /sdcard/Download' }).waitFor();
    await page.getByRole('button', { name: 'Up', exact: true }).click();
    await table.waitFor();
    await axe('files tab');
  });

  it('Apps: Browse… installs an app, its card can be dismissed, and Uninstall takes it off pm list packages', async () => {
    await tab('Apps').click();
    const apk = buildApk({ packageName: APP, label: 'Toolbox E2E', versionName: '1.0' });
    await page.getByLabel('App files to install on Pixel 7').setInputFiles({ name: 'toolbox.apk', mimeType: 'application/vnd.android.package-archive', buffer: apk });
    const job = page.getByRole('listitem', { name: 'Install of toolbox.apk' });
    await job.getByText(`Installed ${APP} on Pixel 7 and opened it.`).waitFor({ timeout: 30_000 });
    await page.getByRole('button', { name: 'Dismiss the install of toolbox.apk' }).click();
    expect(await job.count()).toBe(0);
    const apps = page.getByRole('list', { name: 'Apps on Pixel 7' });
    const app = apps.getByRole('listitem', { name: 'Toolbox E2E' });
    await app.waitFor();
    await app.getByRole('button', { name: 'Stop' }).click();
    await page.getByRole('status').filter({ hasText: 'Stopped Toolbox E2E.' }).waitFor();
    await app.getByRole('button', { name: 'Clear data' }).click();
    await page.getByRole('status').filter({ hasText: 'Cleared the data of Toolbox E2E.' }).waitFor();
    await axe('apps tab');
    await app.getByRole('button', { name: 'Uninstall…' }).click();
    await app.getByRole('button', { name: 'Uninstall Toolbox E2E' }).click();
    await page.getByRole('status').filter({ hasText: 'Uninstalled Toolbox E2E.' }).waitFor();
    expect((await phone().shell('pm list packages')).output.toString()).not.toContain(APP);
    await expect.poll(() => app.count()).toBe(0);
  });

  it('Record screen downloads an H.264 MP4 a box parser reads; Screenshot downloads a lossless PNG', async () => {
    await page.getByRole('button', { name: 'Record screen' }).click();
    await page.getByRole('button', { name: 'Stop and download recording' }).waitFor();
    await act({ type: 'pressButton', button: 'HOME' });
    await act({ type: 'launchApp', packageName: 'com.android.settings' });
    const video = await download(() => page.getByRole('button', { name: 'Stop and download recording' }).click());
    expect(video.name).toMatch(/^Pixel-7-.*\.mp4$/);
    const boxes = mp4Boxes(video.data);
    expect(boxes.types.at(-1)).toBe('moov');
    expect(boxes.sampleEntry).toBe('avc1');
    expect(boxes.samples).toBeGreaterThanOrEqual(1);
    expect(boxes.firstSampleNalTypes).toContain(5);
    await page.getByRole('button', { name: 'Record screen' }).waitFor();

    const shot = await download(() => page.getByRole('button', { name: 'Screenshot' }).click());
    expect(shot.name).toMatch(/\.png$/);
    expect(shot.data.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
  });

  it('Logcat: a pause holds the lines logged meanwhile and says how many; Resume shows every one', async () => {
    await tab('Logcat').click();
    const log = page.getByRole('list', { name: 'Log of Pixel 7' });
    await expect.poll(() => log.getByRole('listitem').count(), { timeout: 20_000 }).toBeGreaterThan(0);
    await page.getByRole('button', { name: 'Pause' }).click();
    for (let i = 0; i < 25; i++) await phone().shell(`log -t E2EPAUSE "held line ${i}"`);
    await page.getByRole('button', { name: /Resume \(\d+ waiting\)/ }).waitFor();
    await page.getByText(/paused, \d+ new lines waiting/).waitFor();
    expect(await log.getByText(/held line/).count()).toBe(0);
    await page.getByRole('button', { name: /^Resume/ }).click();
    const held = await log.getByText(/held line \d+/).allInnerTexts();
    expect(held.map((t) => Number(/held line (\d+)/.exec(t)![1]))).toEqual(Array.from({ length: 25 }, (_, i) => i));
    const exported = await download(() => page.getByRole('button', { name: 'Export shown' }).click());
    expect(exported.data.toString()).toContain('E2EPAUSE: held line 24');
  });

  it('Logcat follows the newest line through a burst of 30 taps, until the reader scrolls up; then Jump to latest', async () => {
    const log = page.getByRole('list', { name: 'Log of Pixel 7' });
    const distanceFromBottom = () => log.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);
    await Promise.all(Array.from({ length: 30 }, (_, i) => phone().shell(`input tap ${100 + i} 400; log -t E2EBURST "burst ${i}"`)));
    await log.getByText('burst 29').or(log.getByText(/burst \d+/).last()).waitFor();
    await expect.poll(async () => (await log.getByText(/burst \d+/).count())).toBe(30);
    await expect.poll(distanceFromBottom).toBeLessThan(24);
    const box = (await log.boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.wheel(0, -600);
    await page.getByRole('button', { name: 'Jump to latest' }).waitFor();
    await phone().shell('log -t E2EBURST "after the scroll"');
    await log.getByText('after the scroll').waitFor();
    expect(await distanceFromBottom()).toBeGreaterThan(24);
    await page.getByRole('button', { name: 'Jump to latest' }).click();
    await expect.poll(distanceFromBottom).toBeLessThan(24);
    expect(await page.getByRole('button', { name: 'Jump to latest' }).count()).toBe(0);
    await axe('logcat tab');
    await snapViewport('04-logcat-1024x768');
  });

  it('Logcat comes back by itself after Restart…', async () => {
    const controls = page.getByRole('group', { name: 'Restart' });
    await controls.getByRole('button', { name: 'Restart…' }).click();
    await controls.getByRole('button', { name: 'Restart now' }).click();
    await controls.getByRole('button', { name: 'Restart…' }).waitFor({ timeout: 30_000 });
    await phone().shell('log -t E2ERESTART "logged after the restart"');
    await page.getByRole('list', { name: 'Log of Pixel 7' }).getByText('logged after the restart').waitFor({ timeout: 15_000 });
    expect(await page.getByText('reconnecting…').count()).toBe(0);
  });

  it('text from an input method reaches the phone: a composed ü, and text inserted without a keydown', async () => {
    await act({ type: 'launchApp', packageName: 'com.example.notes' });
    const elements = (await c().call('GET', `/sessions/${sessionId}/devices/${encodeURIComponent(serial)}/elements`, { token })).body.data;
    const field = elements.find((e: { resourceId: string }) => e.resourceId === 'com.example.notes:id/note_text');
    await act({ type: 'tap', x: field.bounds.x + 5, y: field.bounds.y + 5 });
    await page.getByRole('textbox', { name: 'Live screen of Pixel 7' }).focus();
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Input.imeSetComposition', { text: 'u', selectionStart: 1, selectionEnd: 1 });
    await cdp.send('Input.imeSetComposition', { text: '¨u', selectionStart: 2, selectionEnd: 2 });
    await cdp.send('Input.insertText', { text: 'ü' });
    await waitFor('the composed ü on the phone', () => phone().state.notesText === 'ü');
    await page.keyboard.insertText('ß😀');
    await waitFor('the inserted text on the phone', () => phone().state.notesText === 'üß😀');
  });

  it('shared lab: an invitation link names the inviter; the Fleet names the member who holds a phone, only within the organization; their phone asks first', async () => {
    const mate = 'mia@lab.test';
    await c().signup(mate, 'mia-password');
    const origin = originOf(lab.engine.api);
    await open(page, `${origin}/organization`);
    await page.getByLabel('New organization').fill('Lab Team');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('heading', { name: 'Lab Team' }).waitFor();
    await page.getByLabel('Email', { exact: true }).fill(mate);
    await page.getByRole('button', { name: 'Create invitation link' }).click();
    const link = await page.getByLabel(`Invitation link for ${mate}`, { exact: true }).inputValue();
    expect(link).toMatch(new RegExp(`^${origin}/join/[A-Za-z0-9_-]{43}$`));
    await axe('organization');

    // The teammate opens the link in their own browser: the invitation names who sent it; they have an account.
    const matePage = await (await browser.newContext({ viewport: { width: 1024, height: 768 } })).newPage();
    await open(matePage, link);
    await matePage.getByRole('region', { name: 'Join Lab Team' }).getByText(OWNER_EMAIL).waitFor();
    await matePage.getByRole('button', { name: 'Have an account? Sign in' }).click();
    await matePage.getByLabel('Password').fill('mia-password');
    await matePage.getByRole('button', { name: 'Sign in and join' }).click();
    await matePage.getByRole('heading', { name: 'Lab Team', exact: true }).waitFor();
    await matePage.context().close();

    const mateToken = await c().login(mate, 'mia-password');
    const team = (await c().call('GET', '/organizations', { token: mateToken })).body.data.find((o: { name: string }) => o.name === 'Lab Team').id;
    const mateSession = (await c().call('POST', '/sessions', { token: mateToken, org: team })).body.id;
    await c().call('POST', `/sessions/${mateSession}/devices`, { token: mateToken, org: team, body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }, { attribute: 'name', operator: 'EQUALS', value: 'Galaxy S21' }] } });

    await page.getByLabel('Current organization').selectOption(team);
    await page.getByRole('link', { name: 'Fleet' }).click();
    const galaxy = page.getByRole('table', { name: 'Phones' }).getByRole('row', { name: /Galaxy S21/ });
    await galaxy.getByRole('link', { name: new RegExp(`^${mate.replace('.', '\\.')} · session`) }).waitFor();
    const personal = (await c().call('GET', '/organizations', { token })).body.data.find((o: { personal: boolean }) => o.personal).id;
    await page.getByLabel('Current organization').selectOption(personal);
    await galaxy.getByText('another organization').waitFor();
    expect(await galaxy.getByText(mate).count()).toBe(0);

    await page.getByLabel('Current organization').selectOption(team);
    await open(page, `${origin}/sessions/${mateSession}`);
    const notice = page.getByRole('region', { name: `Galaxy S21 held by ${mate}` });
    await notice.getByText('Ask them before you act on it or release it.').waitFor();
    expect(await page.getByRole('button', { name: /^Release Galaxy S21/ }).count()).toBe(0);
    await axe('a teammate\'s session');
    await notice.getByRole('button', { name: `I asked ${mate}: open Galaxy S21` }).click();
    await page.getByRole('img', { name: 'Screen of Galaxy S21' }).waitFor();
    // Back to the Fleet before the Personal organization: its session is not the Personal organization's to show.
    await page.getByRole('link', { name: 'Fleet' }).click();
    await page.getByLabel('Current organization').selectOption(personal);
  });

  it('LAN sharing asks whether sign-up stays open; Usage says what the plan means here', async () => {
    const origin = originOf(lab.engine.api);
    await open(page, `${origin}/settings`);
    await page.getByLabel(/Share this lab on the LAN/).check();
    const ask = page.getByRole('group', { name: 'Sign-up on the LAN' });
    await ask.getByText('anyone who reaches this lab on the LAN could create an account').waitFor();
    await axe('settings, asking');
    await ask.getByRole('button', { name: 'Cancel' }).click();
    expect(await page.getByLabel(/Share this lab on the LAN/).isChecked()).toBe(false);
    expect((await c().call('GET', '/lab/settings', { token })).body.lanSharing.enabled).toBe(false);

    await page.getByRole('link', { name: 'Usage' }).click();
    await page.getByText('At zero nothing is stopped or refused and nothing is charged').waitFor();
    await axe('usage');
    await open(page, `${origin}/sessions/${sessionId}`);
    await image().waitFor();
  });

  it('a chat started from the Assistant tab is in the session\'s Chats tab; the test results list shows a run finish', async () => {
    await tab('Assistant').click();
    await page.getByRole('button', { name: 'Start a chat about Pixel 7' }).click();
    await page.getByLabel('Ask the assistant to do something on Pixel 7').waitFor();
    await page.getByRole('tab', { name: 'Chats', exact: true }).click();
    await expect.poll(() => page.getByRole('list', { name: 'Chats' }).getByRole('listitem').count()).toBe(1);
    await page.getByRole('tab', { name: 'Devices', exact: true }).click();

    const run = (await c().call('POST', '/test-results', { token, body: { name: 'checkout flow', status: 'running' } })).body.id;
    await page.getByRole('link', { name: 'Test results' }).click();
    const row = page.getByRole('table', { name: 'Test results' }).getByRole('row', { name: /checkout flow/ });
    await row.getByText('running').waitFor();
    await c().call('PATCH', `/test-results/${run}`, { token, body: { status: 'passed' } });
    await row.getByText('passed').waitFor({ timeout: 10_000 });
    await axe('test results');
    await open(page, `${originOf(lab.engine.api)}/sessions/${sessionId}`);
    await image().waitFor();
  });

  it('Files & Apps names an app by its label and installs it on a held phone', async () => {
    await page.getByRole('link', { name: 'Files & Apps' }).click();
    const card = page.getByRole('article', { name: 'App Toolbox E2E' });
    await card.getByText(APP).waitFor();
    await card.getByRole('button', { name: 'Install on a phone…' }).click();
    const form = card.getByRole('form', { name: 'Install Toolbox E2E on a phone' });
    await form.getByLabel('Phone').selectOption({ label: `Pixel 7 (${serial})` });
    await form.getByRole('button', { name: 'Install', exact: true }).click();
    await form.getByRole('status').filter({ hasText: 'Installed Toolbox E2E on Pixel 7 and opened it.' }).waitFor({ timeout: 20_000 });
    expect(phone().state.packages).toContain(APP);
    await axe('files and apps');
    await open(page, `${originOf(lab.engine.api)}/sessions/${sessionId}`);
    await image().waitFor();
  });

  it('at 1440x900 the phone page passes axe-core and is saved', async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await tab('Details').click();
    await page.waitForTimeout(300);
    await snapViewport('03-phone-1440x900');
    await axe('phone page at 1440');
    // While the phone restarted, the log pane's reconnects were answered 409 device_not_in_use, as they should be.
    expect(errors.filter((e) => !/status of 409/.test(e))).toEqual([]);
  });
});
