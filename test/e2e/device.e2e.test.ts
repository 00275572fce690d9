/**
 * The GUI in Chromium against a real engine with a simulated phone on a private adb server: the fleet, a session,
 * allocating a phone through the filter builder, its live screen, and a click that taps it.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, OWNER_EMAIL, OWNER_PASSWORD } from '../support/engine.js';
import { adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';
import { chromiumOrSkip, sharedChromium, logIn, newContext, originOf, snap } from './support/browser.js';

const ready = chromiumOrSkip() && adbOrSkip();
const SUITE = 'device';
const PHONE = { model: 'Pixel 7', osVersion: '14', battery: 76, width: 720, height: 1600, density: 320 };

/** How many frames the page has shown on the live screen. */
const framesShown = (page: Page) => page.getByRole('img', { name: /^Screen of/ }).getAttribute('data-frames').then(Number);

describe.runIf(ready)('GUI: a phone in a session', () => {
  let lab: TestLab;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    [lab, browser] = await Promise.all([startLab([PHONE, { model: 'Galaxy S21', osVersion: '12', battery: 15 }]), sharedChromium()]);
    page = await (await newContext(browser)).newPage();
  });
  afterAll(async () => {
    await browser?.close();
    await lab?.stop();
  });

  it('lists the phones in the fleet, live: a phone plugged in shows up without a reload', async () => {
    const origin = originOf(lab.engine.api);
    await logIn(page, origin, OWNER_EMAIL, OWNER_PASSWORD, '/fleet');
    const phones = page.getByRole('table', { name: 'Phones' });
    await phones.getByRole('row', { name: /Pixel 7/ }).waitFor();
    await phones.getByRole('row', { name: /Galaxy S21/ }).getByLabel('Battery 15%').waitFor();
    const serial = await lab.plug({ model: 'Pixel 8', osVersion: '15' });
    await phones.getByRole('row', { name: /Pixel 8/ }).waitFor({ timeout: 15_000 });
    await page.getByRole('list', { name: 'Recent plug and unplug events' }).getByText(`Pixel 8 (${serial}) plugged`).waitFor();
    await snap(page, SUITE, '01-fleet');
  });

  it('creates a session, allocates a phone with a name filter, shows its screen, and a click taps it', async () => {
    const sockets: string[] = [];
    page.on('websocket', (ws) => sockets.push(ws.url()));
    await page.getByRole('link', { name: 'Sessions' }).click();
    await page.getByRole('button', { name: 'New session' }).click();
    await page.getByRole('heading', { name: /^Session / }).waitFor();
    const sessionId = page.url().split('/').pop()!;

    await page.getByRole('button', { name: 'Add name filter' }).click();
    await page.getByLabel('Filter 1 operator').selectOption('STARTS_WITH');
    await page.getByLabel('Filter 1 value').fill('Pixel 7');
    await snap(page, SUITE, '02-filter-builder');
    await page.getByRole('button', { name: 'Allocate phone' }).click();

    const screen = page.getByRole('img', { name: 'Screen of Pixel 7' });
    await screen.waitFor({ timeout: 20_000 });
    await expect.poll(() => framesShown(page), { timeout: 15_000 }).toBeGreaterThan(0);
    await snap(page, SUITE, '03-live-screen');
    // The bearer travels as a subprotocol, never in a URL that a proxy or a log could keep.
    expect(sockets).toEqual([expect.stringMatching(/\/screen\?maxSize=\d+&codecs=h264%2Cjpeg&org=[0-9a-f-]+$/)]);

    // The phone shows its launcher; the Settings icon is where the elements endpoint says it is.
    const c = client(lab.engine.api);
    const token = await c.login();
    const devices = (await c.call('GET', `/sessions/${sessionId}/devices`, { token })).body.data;
    const serial = devices[0].info.serial as string;
    const elements = async () => (await c.call('GET', `/sessions/${sessionId}/devices/${encodeURIComponent(serial)}/elements`, { token })).body.data as any[];
    const icon = (await elements()).find((e) => e.text === 'Settings' && e.clickable) ?? (await elements()).find((e) => e.contentDescription === 'Settings');
    expect(icon, 'the launcher shows a Settings icon').toBeDefined();

    const before = await screen.screenshot();
    const box = (await screen.boundingBox())!;
    // The image shows the whole display: a point on it maps linearly to the phone's pixels.
    await page.mouse.click(
      box.x + ((icon.bounds.x + icon.bounds.width / 2) / PHONE.width) * box.width,
      box.y + ((icon.bounds.y + icon.bounds.height / 2) / PHONE.height) * box.height,
    );
    await waitFor('the Settings app on the phone', async () => (await elements()).some((e) => /Network|Battery|Display|About phone/.test(e.text)));
    await expect.poll(async () => Buffer.compare(await screen.screenshot(), before), { timeout: 10_000 }).not.toBe(0);
    await snap(page, SUITE, '04-after-tap');

    // The Home button goes back to the launcher, and the screen shows it.
    const settingsShot = await screen.screenshot();
    await page.getByRole('button', { name: 'Home' }).click();
    await waitFor('the launcher again', async () => (await elements()).some((e) => e.text === 'Settings' && e.clickable));
    await expect.poll(async () => Buffer.compare(await screen.screenshot(), settingsShot), { timeout: 10_000 }).not.toBe(0);

    // Release asks first, as Restart does: it uninstalls the session's apps.
    await page.getByRole('button', { name: 'Release Pixel 7…' }).click();
    await page.getByText('Release Pixel 7? The apps installed in this session are uninstalled.').waitFor();
    await page.getByRole('button', { name: 'Release now' }).click();
    await page.getByRole('region', { name: 'Released phones' }).getByText(/was released at .*: you released it\./).waitFor({ timeout: 15_000 });
    await snap(page, SUITE, '05-released');
  });

  it('shows the API\'s message when no phone could ever match', async () => {
    await page.getByLabel('Filter 1 value').fill('Nokia 3310');
    await page.getByRole('button', { name: 'Allocate phone' }).click();
    const alert = page.getByRole('form', { name: 'Allocate a phone' }).getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/match/i);
    await snap(page, SUITE, '06-no-match');
  });
});
