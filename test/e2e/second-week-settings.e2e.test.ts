/**
 * The lab owner's second week in Chromium, at 1440x900, 1280x800 and 1024x768: Settings → Sharing the phones refuses
 * in the field an idle time the lab refuses, shows the lab's answer beside its Save button in minutes, and confirms a
 * save; a new API key's snippets use LAN sharing's address, with the LAN certificate one click away, its fingerprint
 * and each client's setting for it. Screenshots go to test-artifacts/e2e/second-week-settings/.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWNER_EMAIL, OWNER_PASSWORD, useEngine } from '../support/engine.js';
import { axeViolations, chromiumOrSkip, logIn, originOf, sharedChromium, snap, watchConsole, open } from './support/browser.js';

const hasChromium = chromiumOrSkip();
const SUITE = 'second-week-settings';
const SIZES = [{ width: 1440, height: 900 }, { width: 1280, height: 800 }, { width: 1024, height: 768 }];
const IDLE = 'Release an idle phone after (minutes, 0: never)';

describe.runIf(hasChromium)('GUI: the lab owner\'s settings and API keys, second week', () => {
  let browser: Browser;
  let page: Page;
  let errors: string[];
  // The lab refuses idle times under a minute (but 0, never).
  const lab = useEngine({ lanPort: 0, deviceIdleMinSeconds: 60 });
  const settings = async () => (await lab.c.call('GET', '/lab/settings', { token: lab.owner })).body;

  beforeAll(async () => {
    browser = await sharedChromium();
    const context = await browser.newContext({ viewport: SIZES[0], acceptDownloads: true });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    errors = watchConsole(page);
    await logIn(page, originOf(lab.t.api), OWNER_EMAIL, OWNER_PASSWORD, '/settings');
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('Sharing the phones: refused in the field in minutes, the lab\'s refusal beside Save in minutes, a save confirmed beside Save', async () => {
    const sharing = page.getByRole('region', { name: 'Sharing the phones' });
    const field = sharing.getByLabel(IDLE);
    const save = sharing.getByRole('button', { name: 'Save sharing' });
    const patches: string[] = [];
    page.on('request', (r) => r.method() === 'PATCH' && patches.push(r.url()));

    // Half a minute: the field itself refuses it, in minutes, and nothing is sent.
    await field.fill('0.5');
    await save.click();
    expect(await field.evaluate((el: HTMLInputElement) => el.validity.valid)).toBe(false);
    expect(await field.evaluate((el: HTMLInputElement) => el.validationMessage)).toBe('The idle time is 0 (never) or at least 1 minute.');
    expect(patches).toEqual([]);
    expect((await settings()).deviceIdleSeconds).toBe(900);

    // A lab whose rule changed since the page loaded (restarted with another minimum) refuses: said beside Save, in minutes.
    await page.route('**/api/v1/lab/settings', (route) => route.request().method() === 'PATCH'
      ? route.fulfill({ status: 400, contentType: 'application/json', body: JSON.stringify({ error: { code: 'idle_too_short', message: 'deviceIdleSeconds is 0 (never) or at least 60, not 120.' } }) })
      : route.fallback(), { times: 1 });
    await field.fill('2');
    await save.click();
    const refusal = sharing.getByRole('alert');
    await refusal.getByText('The lab refused: the idle time is 0 (never) or at least 1 minute.').waitFor();
    expect(await refusal.textContent()).not.toMatch(/seconds|deviceIdleSeconds/);
    const [r, s] = [(await refusal.boundingBox())!, (await save.boundingBox())!];
    expect(Math.abs(r.y + r.height / 2 - (s.y + s.height / 2))).toBeLessThan(20);
    expect(r.x).toBeGreaterThan(s.x + s.width);
    await snap(page, SUITE, '01-refused-beside-save');
    expect(errors.splice(0)).toEqual([expect.stringContaining('status of 400')]);

    // A valid save: taken by the lab, and confirmed beside the button.
    await field.fill('7');
    await save.click();
    await sharing.getByRole('status').getByText('Saved: idle phones go back after 7 min, reservations of up to 8 h.').waitFor();
    expect((await settings()).deviceIdleSeconds).toBe(420);
    for (const size of SIZES) {
      await page.setViewportSize(size);
      const [c, b] = [(await sharing.getByRole('status').boundingBox())!, (await save.boundingBox())!];
      expect(c.y).toBeLessThan(b.y + b.height);
      expect(c.y + c.height).toBeGreaterThan(b.y);
      await snap(page, SUITE, `02-saved-${size.width}x${size.height}`);
    }
    await page.setViewportSize(SIZES[0]!);
  });

  it('a new API key\'s snippets use LAN sharing\'s address, with the certificate one click away, its fingerprint and each client\'s setting', async () => {
    const on = await lab.c.call('PATCH', '/lab/settings', { token: lab.owner, body: { lanSharing: true } });
    expect(on.status).toBe(200);
    const { urls, certificateSha256 } = on.body.lanSharing as { urls: string[]; certificateSha256: string };
    await open(page, `${originOf(lab.t.api)}/organization`);
    await page.getByLabel('Key name').fill('ci');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = await page.getByLabel('The new API key').inputValue();
    const usage = page.locator('details.key-usage');
    await expect.poll(() => usage.getByLabel('CI and scripts (curl, the API): how to use the key').textContent()).toBe(`export BENCHTOP=${urls[0]}/api/v1\nexport KEY=${key}`);
    expect(await usage.getByLabel('WebDriver (Appium clients): how to use the key').textContent()).toBe(`${urls[0]!.replace('https://', 'https://any:' + key + '@')}/wd/hub`);

    const certificate = usage.getByRole('region', { name: 'The lab\'s certificate' });
    await certificate.getByText(certificateSha256).waitFor();
    for (const client of ['curl', 'Node (WebdriverIO, the Playwright reporter, MCP clients)', 'Python (requests, Appium\'s Python client)']) {
      expect(await certificate.getByLabel(`${client}: how to use the key`).textContent()).toContain('benchtop-lan-certificate.pem');
    }
    const [download] = await Promise.all([page.waitForEvent('download'), certificate.getByRole('link', { name: 'Download benchtop-lan-certificate.pem' }).click()]);
    expect(download.suggestedFilename()).toBe('benchtop-lan-certificate.pem');
    expect(new X509Certificate(readFileSync((await download.path())!)).fingerprint256).toBe(certificateSha256);

    // This machine's own address is one choice away.
    await usage.getByLabel('Address in the snippets').selectOption({ label: `${originOf(lab.t.api)} (this machine only)` });
    expect(await usage.getByLabel('CI and scripts (curl, the API): how to use the key').textContent()).toBe(`export BENCHTOP=${lab.t.api}\nexport KEY=${key}`);
    await usage.getByLabel('Address in the snippets').selectOption({ index: 0 });
    for (const size of SIZES) {
      await page.setViewportSize(size);
      await snap(page, SUITE, `03-key-snippets-${size.width}x${size.height}`);
    }
    expect(await axeViolations(page)).toEqual([]);

    // Settings → LAN sharing: the same certificate, one click from its fingerprint.
    await open(page, `${originOf(lab.t.api)}/settings`);
    const lan = page.getByRole('region', { name: 'LAN sharing' });
    await lan.getByText(certificateSha256).waitFor();
    expect(await lan.getByRole('link', { name: 'Download the certificate' }).getAttribute('href')).toBe('/api/v1/lab/certificate.pem');
    await snap(page, SUITE, '04-settings-lan-certificate');
    expect(errors).toEqual([]);
  });
});
