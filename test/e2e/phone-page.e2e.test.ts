/**
 * The phone page in Chromium at 1440x900, against a real engine, adb server and simulated phones: the screen above the
 * fold and as large as the window allows, keys (Backspace included) and paste reaching the phone, the wheel as a
 * swipe, the live logcat pane, an APK dropped on the screen installed, keyboard-only use, axe-core, and the page at
 * 800 px. Screenshots go to test-artifacts/e2e/phone-page/.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApk } from '../../src/sim/android/apk.js';
import { client, OWNER_EMAIL, OWNER_PASSWORD } from '../support/engine.js';
import { adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';
import { axeViolations, chromiumOrSkip, sharedChromium, logIn, originOf, snap, watchConsole, open } from './support/browser.js';

const ready = chromiumOrSkip() && adbOrSkip();
const SUITE = 'phone-page';
const PHONE = { model: 'Pixel 7', osVersion: '14', sdk: 34, battery: 76, width: 1080, height: 2400, density: 420 };
const DROPPED = 'com.benchtop.e2e.dropped';
const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'e2e', SUITE);

/** The window as it is, no taller: what a person sees without scrolling. */
async function snapViewport(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });
}

describe.runIf(ready)('GUI: the phone page', () => {
  let lab: TestLab;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  /** URLs answered 404: until the engine's logs endpoint is merged, the logcat pane's request is one. */
  const missing: string[] = [];
  let sessionId: string;
  let serial: string;
  let token: string;
  const c = () => client(lab.engine.api);
  const phone = () => lab.phone(serial).state;
  const screen = () => page.getByRole('textbox', { name: /^Live screen of Pixel 7/ });
  const image = () => page.getByRole('img', { name: 'Screen of Pixel 7' });
  const framesShown = () => image().getAttribute('data-frames').then(Number);
  const act = (body: unknown) => c().call('POST', `/sessions/${sessionId}/devices/${encodeURIComponent(serial)}/actions`, { token, body });

  beforeAll(async () => {
    [lab, browser] = await Promise.all([startLab([PHONE, { model: 'Galaxy S21', osVersion: '12' }]), sharedChromium()]);
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    errors = watchConsole(page);
    page.on('response', (r) => {
      if (r.status() === 404) missing.push(new URL(r.url()).pathname);
    });
    token = await c().login();
  });
  afterAll(async () => {
    await browser?.close();
    await lab?.stop();
  });

  it('Fleet: a search narrows the phones and says how many match; "Use this phone" opens a session holding it', async () => {
    await logIn(page, originOf(lab.engine.api), OWNER_EMAIL, OWNER_PASSWORD, '/fleet');
    // The tab's name is set in an effect, which Preact runs after the frame that drew the page.
    await expect.poll(() => page.title()).toBe('Fleet · Benchtop');
    const phones = page.getByRole('table', { name: 'Phones' });
    await phones.getByRole('row', { name: /Galaxy S21/ }).waitFor();
    await page.getByRole('searchbox', { name: 'Search' }).fill('pixel');
    await page.getByRole('search', { name: 'Find phones' }).getByText('1 of 2 phones match · 1 free').waitFor();
    expect(await phones.getByRole('row', { name: /Galaxy S21/ }).count()).toBe(0);
    await page.getByLabel('Version at least').fill('15');
    await page.getByText('No phone matches that search.').waitFor();
    await page.getByLabel('Version at least').fill('');
    // The lab owner notes which of two like phones is which; the note shows under the name and a search finds it.
    await page.getByRole('searchbox', { name: 'Search' }).fill('');
    await phones.getByRole('button', { name: /^Note on Galaxy S21/ }).click();
    const editor = page.getByRole('form', { name: 'Note on Galaxy S21' });
    await editor.getByRole('textbox').fill('shelf B, SIM for SMS');
    await editor.getByRole('button', { name: 'Save' }).click();
    await phones.getByRole('row', { name: /Galaxy S21/ }).getByText('shelf B, SIM for SMS').waitFor();
    expect(await editor.count()).toBe(0);
    await snap(page, SUITE, '01-fleet-note');
    await page.getByRole('searchbox', { name: 'Search' }).fill('shelf b');
    await page.getByRole('search', { name: 'Find phones' }).getByText('1 of 2 phones match · 1 free').waitFor();
    await page.getByRole('searchbox', { name: 'Search' }).fill('pixel');
    await snap(page, SUITE, '01-fleet-search');

    // A phone that cannot be taken says why, under its own button and whole within the table (its column is only as
    // wide as the button). The lab answering 503 once stands in for an engine shutting down.
    const use = phones.getByRole('button', { name: /^Use this phone: Pixel 7/ });
    await page.route('**/api/v1/sessions', (route) => route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: { code: 'shutting_down', message: 'Benchtop is shutting down; try again in a moment.' } }) }), { times: 1 });
    await use.click();
    const why = phones.getByRole('row', { name: /Pixel 7/ }).getByRole('alert');
    await why.getByText('Benchtop is shutting down; try again in a moment.').waitFor();
    const [alertBox, tableBox, useBox] = await Promise.all([why.boundingBox(), phones.boundingBox(), use.boundingBox()]);
    expect(alertBox!.x + alertBox!.width).toBeLessThanOrEqual(tableBox!.x + tableBox!.width);
    expect(alertBox!.y).toBeGreaterThanOrEqual(useBox!.y + useBox!.height);
    expect(await use.isEnabled()).toBe(true);
    // The browser logged that 503; it was this test's own, so the console check of the later tests does not count it.
    expect(errors.splice(0)).toEqual([expect.stringContaining('status of 503')]);

    // This very phone, by its serial: of two like phones, the row chosen.
    const rowSerial = await phones.getByRole('row', { name: /Pixel 7/ }).getAttribute('data-serial');
    const allocation = page.waitForRequest((r) => r.method() === 'POST' && /\/sessions\/[^/]+\/devices$/.test(r.url()));
    await use.click();
    expect((await allocation).postDataJSON().filters).toEqual([
      { attribute: 'platform', operator: 'EQUALS', value: 'android' },
      { attribute: 'serial', operator: 'EQUALS', value: rowSerial },
    ]);
    await page.waitForURL(/\/sessions\/[0-9a-f-]{36}$/);
    sessionId = page.url().split('/').pop()!;
    await image().waitFor({ timeout: 30_000 });
    await expect.poll(framesShown, { timeout: 20_000 }).toBeGreaterThan(0);
    serial = (await c().call('GET', `/sessions/${sessionId}/devices`, { token })).body.data[0].info.serial;
  });

  it('at 1440x900 the whole screen is above the fold and at least 600 px tall, beside the device details', async () => {
    await page.evaluate(() => window.scrollTo(0, 0));
    await expect.poll(async () => (await image().boundingBox())!.height, { timeout: 10_000 }).toBeGreaterThanOrEqual(600);
    const box = (await image().boundingBox())!;
    expect(box.y).toBeGreaterThanOrEqual(0);
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.y + box.height).toBeLessThanOrEqual(900);
    expect(box.x + box.width).toBeLessThanOrEqual(1440);
    // The image has the phone's shape: 1080x2400.
    expect(Math.abs(box.width / box.height - 1080 / 2400)).toBeLessThan(0.02);
    const details = page.getByRole('definition').filter({ hasText: '1080 × 2400' });
    await details.waitFor();
    await page.getByText('arm64-v8a').waitFor();
    await page.getByText(/76%/).first().waitFor();
    await expect.poll(() => page.title()).toMatch(/^Session [0-9a-f]{8} · Benchtop$/);
    await snapViewport(page, '02-phone-1440x900');
  });

  it('typed text reaches the phone in order, Backspace included; a paste types the clipboard; Ctrl+A, C and X act on the phone', async () => {
    await act({ type: 'launchApp', packageName: 'com.example.notes' });
    const elements = (await c().call('GET', `/sessions/${sessionId}/devices/${encodeURIComponent(serial)}/elements`, { token })).body.data;
    const field = elements.find((e: { resourceId: string }) => e.resourceId === 'com.example.notes:id/note_text');
    await act({ type: 'tap', x: field.bounds.x + 5, y: field.bounds.y + 5 });

    await screen().focus();
    await page.keyboard.type('hellp');
    await page.keyboard.press('Backspace');
    await page.keyboard.type('o world');
    await waitFor('"hello world" in the notes', () => phone().notesText === 'hello world');
    // A paste: the browser's paste event carries the clipboard's text.
    await screen().evaluate((el) => {
      const data = new DataTransfer();
      data.setData('text/plain', ', pasted');
      el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    });
    await waitFor('the pasted text', () => phone().notesText === 'hello world, pasted');
    await page.keyboard.press('Backspace');
    await page.keyboard.press('Backspace');
    await waitFor('two characters deleted', () => phone().notesText === 'hello world, past');
    // Ctrl+A selects the field's text, Ctrl+C copies it to the phone's clipboard, typing replaces it, Ctrl+X cuts it.
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Control+C');
    await waitFor('the copy on the phone\'s clipboard', () => phone().clipboard === 'hello world, past');
    await page.keyboard.type('new');
    await waitFor('the selection replaced', () => phone().notesText === 'new');
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Control+X');
    await waitFor('the text cut', () => phone().notesText === '' && phone().clipboard === 'new');
    expect(errors).toEqual([]);
  });

  it('the wheel scrolls the phone: one swipe per burst, the finger moving up for a scroll down', async () => {
    const box = (await image().boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    const before = JSON.stringify(phone().lastSwipe);
    await page.mouse.wheel(0, 240);
    await waitFor('a swipe from the wheel', () => JSON.stringify(phone().lastSwipe) !== before);
    const swipe = phone().lastSwipe!;
    expect(swipe.y1).toBeGreaterThan(swipe.y2);
    expect(Math.abs(swipe.x1 - 540)).toBeLessThan(20);
  });

  it('the hardware buttons and rotate drive the phone', async () => {
    await page.getByRole('button', { name: 'Volume up' }).click();
    await page.getByRole('button', { name: 'Home', exact: true }).click();
    await waitFor('the launcher', () => phone().screen === 'home');
    await page.getByRole('button', { name: 'Rotate' }).click();
    await expect.poll(async () => (await act({ type: 'getOrientation' })).body.orientation).toBe('landscape');
    await expect.poll(async () => { const b = (await image().boundingBox())!; return b.width > b.height; }, { timeout: 10_000 }).toBe(true);
    await snapViewport(page, '03-rotated');
    await page.getByRole('button', { name: 'Rotate' }).click();
    await expect.poll(async () => (await act({ type: 'getOrientation' })).body.orientation).toBe('portrait');
  });

  it('Restart asks first, then restarts the phone: it stays held, comes back on its home screen, and the screen shows again', async () => {
    await act({ type: 'launchApp', packageName: 'com.android.settings' });
    await waitFor('Settings in front', () => phone().foregroundPackage === 'com.android.settings');
    const controls = page.getByRole('group', { name: 'Restart' });
    // Asking is not doing: Cancel leaves the phone as it is.
    await controls.getByRole('button', { name: 'Restart…' }).click();
    await controls.getByRole('button', { name: 'Cancel' }).click();
    await controls.getByRole('button', { name: 'Restart…' }).waitFor();
    expect(phone().foregroundPackage).toBe('com.android.settings');

    const allocation = (await c().call('GET', `/sessions/${sessionId}/devices/${encodeURIComponent(serial)}`, { token })).body.id as string;
    await controls.getByRole('button', { name: 'Restart…' }).click();
    await controls.getByRole('button', { name: 'Restart now' }).click();
    await controls.getByRole('status').filter({ hasText: 'Restarting Pixel 7' }).waitFor();
    // The answer comes once the phone is back: the control is offered again.
    await controls.getByRole('button', { name: 'Restart…' }).waitFor({ timeout: 30_000 });
    expect(phone().foregroundPackage).toBeUndefined();
    expect(phone().screen).toBe('home');
    const after = (await c().call('GET', `/sessions/${sessionId}/devices/${encodeURIComponent(serial)}`, { token })).body;
    expect([after.id, after.status]).toEqual([allocation, 'in_use']);
    await expect.poll(framesShown, { timeout: 15_000 }).toBeGreaterThan(0);
    expect(await page.getByRole('alert').count()).toBe(0);
  });

  it('an APK dropped on the screen is uploaded with progress and installed; a text file is refused with a sentence', async () => {
    const apk = buildApk({ packageName: DROPPED, label: 'Dropped Demo', versionName: '1.0.0' }).toString('base64');
    const drop = (name: string, base64: string, type: string) => screen().evaluate((el, file) => {
      const bytes = Uint8Array.from(atob(file.base64), (ch) => ch.charCodeAt(0));
      const data = new DataTransfer();
      data.items.add(new File([bytes], file.name, { type: file.type }));
      for (const kind of ['dragenter', 'dragover', 'drop']) el.dispatchEvent(new DragEvent(kind, { dataTransfer: data, bubbles: true, cancelable: true }));
    }, { name, base64, type });

    await drop('notes.txt', Buffer.from('not an app').toString('base64'), 'text/plain');
    await page.getByRole('listitem', { name: 'Install of notes.txt' }).getByText('notes.txt is not an app: choose an Android .apk or an iOS .ipa file.').waitFor();

    await drop('dropped.apk', apk, 'application/vnd.android.package-archive');
    const job = page.getByRole('listitem', { name: 'Install of dropped.apk' });
    await job.getByText(`Installed ${DROPPED} on Pixel 7 and opened it.`).waitFor({ timeout: 30_000 });
    expect(phone().packages).toContain(DROPPED);
    expect(phone().foregroundPackage).toBe(DROPPED);
    await snapViewport(page, '04-apk-installed');
  });

  it('the logcat pane shows the phone\'s log live, filtered by level and text (needs the engine\'s logs endpoint)', async () => {
    await page.getByRole('tab', { name: 'Logcat' }).click();
    const log = page.getByRole('list', { name: 'Log of Pixel 7' });
    await act({ type: 'launchApp', packageName: 'com.android.settings' });
    await expect.poll(() => log.getByRole('listitem').count(), { timeout: 20_000 }).toBeGreaterThan(0);
    const first = await log.getByRole('listitem').first().locator('.tag').innerText();
    await page.getByLabel('Filter log lines by tag, text or pid').fill(first);
    const shown = await log.getByRole('listitem').allInnerTexts();
    expect(shown.length).toBeGreaterThan(0);
    expect(shown.every((l) => l.toLowerCase().includes(first.toLowerCase()))).toBe(true);
    await page.getByLabel('Lowest log level shown').selectOption('F');
    await expect.poll(async () => (await log.locator('li:not([data-level="F"])').count())).toBe(0);
    await page.getByLabel('Lowest log level shown').selectOption('V');
    await page.getByLabel('Filter log lines by tag, text or pid').fill('');
    await snapViewport(page, '05-logcat');
  });

  it('works from the keyboard alone: skip link, buttons, tabs and the screen, with a visible focus ring', async () => {
    await open(page, page.url());
    await image().waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    const url = page.url();
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');
    expect(page.url().split('#')[0]).toBe(url);

    await act({ type: 'launchApp', packageName: 'com.example.notes' });
    // Tab to the Home button, press it with Enter.
    const focusedName = () => page.evaluate(() => document.activeElement?.getAttribute('aria-label') ?? document.activeElement?.textContent ?? '');
    for (let i = 0; i < 40 && (await focusedName()) !== 'Home'; i++) await page.keyboard.press('Tab');
    expect(await focusedName()).toBe('Home');
    const ring = await page.evaluate(() => {
      const s = getComputedStyle(document.activeElement!);
      return { style: s.outlineStyle, width: parseFloat(s.outlineWidth), color: s.outlineColor };
    });
    expect(ring.style).toBe('solid');
    expect(ring.width).toBeGreaterThanOrEqual(2);
    await page.keyboard.press('Enter');
    await waitFor('the launcher, from the keyboard', () => phone().screen === 'home');

    // The side panel's tabs move with the arrow keys; the screen is the last stop and takes keys for the phone.
    for (let i = 0; i < 40 && !(await page.evaluate(() => document.activeElement?.getAttribute('role') === 'tab' && document.activeElement.textContent === 'Details')); i++) await page.keyboard.press('Tab');
    await page.keyboard.press('ArrowRight');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Logcat');
    await page.keyboard.press('ArrowLeft');
    for (let i = 0; i < 40 && !(await page.evaluate(() => document.activeElement?.classList.contains('screen-keys'))); i++) await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.classList.contains('screen-keys'))).toBe(true);
    await snapViewport(page, '06-keyboard-focus-on-screen');
    // Shift+Tab leaves the screen: no keyboard trap.
    await page.keyboard.press('Shift+Tab');
    expect(await page.evaluate(() => document.activeElement?.classList.contains('screen-keys'))).toBe(false);
  });

  it('passes axe-core\'s WCAG 2.1 A and AA rules on the phone page and the fleet', async () => {
    expect(await axeViolations(page)).toEqual([]);
    await page.getByRole('link', { name: 'Fleet' }).click();
    await page.getByRole('table', { name: 'Phones' }).waitFor();
    expect(await axeViolations(page)).toEqual([]);
    await page.getByRole('link', { name: 'Files & Apps' }).click();
    await page.getByRole('heading', { name: 'Files', exact: true }).waitFor();
    expect(await axeViolations(page)).toEqual([]);
    await page.getByRole('link', { name: 'Sessions' }).click();
    await page.getByRole('table', { name: 'Sessions' }).waitFor();
    expect(await axeViolations(page)).toEqual([]);
  });

  it('at 800 px nothing overflows sideways and the chat\'s Send button is whole', async () => {
    await page.setViewportSize({ width: 800, height: 900 });
    for (const path of ['/fleet', '/sessions', '/files', `/sessions/${sessionId}`]) {
      await open(page, originOf(lab.engine.api) + path);
      await page.getByRole('heading', { level: 1 }).waitFor();
      await page.waitForTimeout(300);
      expect(await page.evaluate(() => document.documentElement.scrollWidth), path).toBeLessThanOrEqual(800);
    }
    await image().waitFor();
    await expect.poll(framesShown, { timeout: 15_000 }).toBeGreaterThan(0);
    await snapViewport(page, '07-phone-800-top');
    await page.getByRole('tab', { name: 'Assistant' }).click();
    await page.getByRole('button', { name: 'Start a chat about Pixel 7' }).click();
    const send = page.getByRole('button', { name: 'Send' });
    await send.scrollIntoViewIfNeeded();
    const box = (await send.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(800);
    await snapViewport(page, '08-phone-800-assistant');
    await snap(page, SUITE, '09-phone-800-full');
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it('a session is named and ended: ending releases its phone, and the chat says why it cannot drive it', async () => {
    await open(page, `${originOf(lab.engine.api)}/sessions/${sessionId}`);
    await page.getByRole('button', { name: 'Rename' }).click();
    await page.getByLabel('Session name').fill('Checkout on Pixel');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('heading', { name: 'Checkout on Pixel' }).waitFor();
    await expect.poll(() => page.title()).toBe('Checkout on Pixel · Benchtop');
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'End session' }).click();
    await page.getByText('This session has ended: its phones and Mac instances were released').waitFor();
    await waitFor('the phone released', async () => (await c().call('GET', `/sessions/${sessionId}/devices`, { token })).body.data[0].status === 'released');
    await page.getByRole('tab', { name: 'Chats' }).click();
    await page.getByText(/Pixel 7 was released, so the assistant can no longer drive it/).waitFor();
    expect(await page.getByLabel('Message to the assistant').isDisabled()).toBe(true);
    await snap(page, SUITE, '10-ended');
    await page.getByRole('link', { name: 'Sessions' }).click();
    await page.getByRole('table', { name: 'Sessions' }).getByRole('link', { name: 'Checkout on Pixel' }).waitFor();
    expect(errors.filter((e) => !/status of 404/.test(e))).toEqual([]);
    expect(missing.filter((p) => !p.endsWith('/logs'))).toEqual([]);
  });
});
