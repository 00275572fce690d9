/**
 * Providers in Chromium: the lab owner adds a provider (its own network namespace, sshd and adb server) in Settings,
 * sees it up; the fleet shows each phone's host; the provider's phone's minicap live screen plays on the phone page,
 * through the hub, on the hub's origin, says it is stale while the provider is away, and plays again once it is back.
 * Screenshots go to test-artifacts/e2e/providers/.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWNER_EMAIL, OWNER_PASSWORD } from '../support/engine.js';
import { adbOrSkip, startLab, type TestLab } from '../support/lab.js';
import { netnsOrSkip, startNetnsProvider, type NetnsProvider } from '../support/provider/index.js';
import { chromiumOrSkip, sharedChromium, logIn, originOf, snap, watchConsole, open } from './support/browser.js';

const ready = chromiumOrSkip() && adbOrSkip() && netnsOrSkip();
const SUITE = 'providers';

describe.runIf(ready)('GUI: providers', () => {
  let lab: TestLab;
  let provider: NetnsProvider;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  const providerOrigins: string[] = [];

  beforeAll(async () => {
    // All settled before any failure is thrown, so that afterAll stops everything that started.
    const parts = await Promise.allSettled([
      startNetnsProvider(5, { phones: [{ port: 24001, options: { model: 'Remote Pixel' } }] }).then((p) => (provider = p)),
      startLab([{ model: 'Desk Pixel' }], { providerCheckMs: 500, providerProbeTimeoutMs: 1000 }).then((l) => (lab = l)),
      sharedChromium().then((b) => (browser = b)),
    ]);
    const failed = parts.find((p): p is PromiseRejectedResult => p.status === 'rejected');
    if (failed) throw failed.reason;
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    errors = watchConsole(page);
    // The browser never talks to a provider: every request goes to the hub's origin.
    page.on('request', (r) => {
      if (new URL(r.url()).hostname === provider.address) providerOrigins.push(r.url());
    });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await lab?.stop();
    await provider?.stop();
  });

  it('Settings: the lab owner confirms the provider\'s host key, then adds it, checked at once and shown up', async () => {
    await logIn(page, originOf(lab.engine.api), OWNER_EMAIL, OWNER_PASSWORD, '/settings');
    await page.getByRole('button', { name: 'Add a provider' }).click();
    const form = page.getByRole('form', { name: 'Add a provider' });
    await form.getByLabel('Name').fill('rack-2');
    await form.getByLabel('Address').fill(provider.address);
    await form.getByLabel('User').fill('root');
    await form.getByLabel('Private key').fill(provider.privateKey);
    // A pasted fingerprint that is not the box's: refused in words, nothing added.
    await form.getByLabel('Expected host key (optional)').fill(`SHA256:${'A'.repeat(43)}`);
    await form.getByRole('button', { name: 'Read the host key' }).click();
    await form.getByRole('alert').getByText(/presents the host key SHA256:\S+, not the one you pasted/).waitFor();
    expect(await page.getByRole('table', { name: 'Providers' }).count()).toBe(0);
    await form.getByLabel('Expected host key (optional)').fill('');
    await form.getByRole('button', { name: 'Read the host key' }).click();
    const fingerprint = await form.getByLabel('Host key fingerprint').textContent();
    expect(fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    await snap(page, SUITE, '01-settings-provider-host-key');
    await form.getByRole('button', { name: 'Trust this key and add' }).click();
    const table = page.getByRole('table', { name: 'Providers' });
    await table.getByRole('row', { name: /rack-2/ }).getByText('up', { exact: true }).waitFor();
    expect(await table.getByRole('row', { name: /rack-2/ }).textContent()).toContain(fingerprint);
    await snap(page, SUITE, '01-settings-providers');
  });

  it('Fleet: each phone shows its host; the provider\'s phone\'s live screen plays through the hub', async () => {
    // What the page showed with the Phones table's first phone. (Before the first poll answers, the table is drawn
    // empty: on a loaded machine that came first once, with no phone and so no providers.)
    await page.addInitScript(() => new MutationObserver((_, observer) => {
      if (!document.querySelector('table[aria-label="Phones"] tbody tr')) return;
      observer.disconnect();
      (globalThis as { __providersAtFirst?: string | null }).__providersAtFirst = document.querySelector('table[aria-label="Providers"]')?.textContent ?? null;
    }).observe(document, { childList: true, subtree: true }));
    await open(page, `${originOf(lab.engine.api)}/fleet`);
    const phones = page.getByRole('table', { name: 'Phones' });
    await phones.getByRole('row', { name: /Remote Pixel.*rack-2/ }).waitFor();
    await phones.getByRole('row', { name: /Desk Pixel.*this workstation/ }).waitFor();
    await page.getByRole('table', { name: 'Providers' }).getByRole('row', { name: /rack-2.*up/ }).waitFor();
    // The providers come from the fleet's own poll: drawn with the phones, not a moment after them.
    expect(await page.evaluate(() => (globalThis as { __providersAtFirst?: string | null }).__providersAtFirst)).toMatch(/rack-2.*up/);
    await snap(page, SUITE, '02-fleet-hosts');
    await phones.getByRole('button', { name: /^Use this phone: Remote Pixel/ }).click();
    await page.waitForURL(/\/sessions\/[0-9a-f-]{36}$/);
    const image = page.getByRole('img', { name: 'Screen of Remote Pixel' });
    await image.waitFor({ timeout: 30_000 });
    await expect.poll(() => image.getAttribute('data-frames').then(Number), { timeout: 20_000 }).toBeGreaterThan(0);
    await snap(page, SUITE, '03-remote-live-screen');
    expect(providerOrigins).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('a live screen whose provider drops says it is stale, keeps the last frame, and plays again once the link is back', async () => {
    const image = page.getByRole('img', { name: 'Screen of Remote Pixel' });
    const stale = page.getByRole('status').filter({ hasText: /^Stale: Remote Pixel went offline at/ });
    const frames = () => image.getAttribute('data-frames').then(Number);
    provider.linkDown();
    let atDrop: number;
    try {
      await stale.waitFor({ timeout: 15_000 });
      expect(await image.getAttribute('data-stale')).toBe('true');
      atDrop = await frames();
      expect(atDrop).toBeGreaterThan(0);
      // Once the session's own poll has the phone offline too, the screen is still there, stale, with its last frame
      // (it was once swapped for the phone's card there, losing both).
      await page.getByRole('region', { name: 'Remote Pixel offline' }).waitFor();
      expect(await image.getAttribute('data-stale')).toBe('true');
      expect(await frames()).toBe(atDrop);
      await snap(page, SUITE, '04-stale-live-screen');
    } finally {
      provider.linkUp();
    }
    await stale.waitFor({ state: 'detached', timeout: 20_000 });
    expect(await image.getAttribute('data-stale')).toBeNull();
    // It follows the phone again: a changed screen is a new frame. The first frame of the fresh minicap can lag its
    // hello by seconds when the whole suite loads the machine, and a change made while it still starts has no frame of
    // its own; so the screen is changed again every 2 s until one arrives, as a user would tap again.
    const changesUntilNewFrame = async (after: number) => {
      const deadline = Date.now() + 30_000;
      for (let i = 0; (await frames()) <= after; i++) {
        if (Date.now() > deadline) throw new Error(`no frame after ${after} within 30 s of changing the screen`);
        await page.getByRole('button', { name: i % 2 === 0 ? 'Recent apps' : 'Home' }).click();
        await expect.poll(frames, { timeout: 2000 }).toBeGreaterThan(after).catch(() => undefined);
      }
    };
    await changesUntilNewFrame(atDrop);
    const resumed = await frames();
    await page.getByRole('button', { name: 'Home' }).click();
    await expect.poll(frames, { timeout: 10_000 }).toBeGreaterThan(resumed);
  }, 90_000);
});
