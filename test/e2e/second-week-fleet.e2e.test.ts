/**
 * A team's second week, the Fleet with a provider, in Chromium at 1440x900, 1280x800 and 1024x768: no word of a phone's
 * row is broken across two lines ("this workstatio n", "127.0.0.1:38 195"). A host name or serial may break after its
 * dots, colons and dashes, as a written address does, never inside a run of letters or digits. Screenshots go to
 * test-artifacts/e2e/second-week-fleet/.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, OWNER_EMAIL, OWNER_PASSWORD } from '../support/engine.js';
import { adbOrSkip, startLab, type TestLab } from '../support/lab.js';
import { netnsOrSkip, startNetnsProvider, type NetnsProvider } from '../support/provider/index.js';
import { chromiumOrSkip, logIn, originOf, sharedChromium, snap, watchConsole } from './support/browser.js';

const ready = chromiumOrSkip() && adbOrSkip() && netnsOrSkip();
const SUITE = 'second-week-fleet';
const SIZES = [{ width: 1440, height: 900 }, { width: 1280, height: 800 }, { width: 1024, height: 768 }];

/**
 * Each run of letters or digits in the Phones table that the browser drew on more than one line, as
 * "column: the word (the cell's text)".
 */
function brokenWords(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const table = document.querySelector('table[aria-label="Phones"]')!;
    const headers = [...table.querySelectorAll('thead th')].map((th) => th.textContent ?? '');
    const broken: string[] = [];
    for (const row of table.querySelectorAll('tbody tr')) {
      [...row.children].forEach((cell, column) => {
        const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          for (const word of (node.textContent ?? '').matchAll(/[\p{L}\p{N}]+/gu)) {
            const range = document.createRange();
            range.setStart(node, word.index);
            range.setEnd(node, word.index + word[0].length);
            const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
            if (lines.size > 1) broken.push(`${headers[column]}: ${word[0]} (${cell.textContent})`);
          }
        }
      });
    }
    return broken;
  });
}

describe.runIf(ready)('GUI: the Fleet with a provider breaks no word', () => {
  let lab: TestLab;
  let provider: NetnsProvider;
  let browser: Browser;
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    // All settled before any failure is thrown, so that afterAll stops everything that started.
    const parts = await Promise.allSettled([
      startNetnsProvider(7, { phones: [{ port: 24101, options: { model: 'Remote Pixel' } }] }).then((p) => (provider = p)),
      startLab([{ model: 'Desk Pixel' }, { model: 'Galaxy S21', osVersion: '12' }], { providerCheckMs: 500, providerProbeTimeoutMs: 1000 }).then((l) => (lab = l)),
      sharedChromium().then((b) => (browser = b)),
    ]);
    const failed = parts.find((p): p is PromiseRejectedResult => p.status === 'rejected');
    if (failed) throw failed.reason;
    const c = client(lab.engine.api);
    const owner = await c.login();
    expect((await c.call('POST', '/lab/providers', { token: owner, body: provider.body({ name: 'build-server-2.office' }) })).status).toBe(201);
    const context = await browser.newContext({ viewport: SIZES[0] });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    errors = watchConsole(page);
    await logIn(page, originOf(lab.engine.api), OWNER_EMAIL, OWNER_PASSWORD, '/fleet');
    await page.getByRole('table', { name: 'Phones' }).getByRole('row', { name: /Remote Pixel.*build-server-2\.office/ }).waitFor({ timeout: 30_000 });
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await lab?.stop();
    await provider?.stop();
  });

  it.each(SIZES)('at $width x $height every word of the Phones table is on one line', async (size) => {
    await page.setViewportSize(size);
    const table = page.getByRole('table', { name: 'Phones' });
    await table.getByRole('row', { name: /Desk Pixel.*this workstation/ }).waitFor();
    await snap(page, SUITE, `01-fleet-${size.width}x${size.height}`);
    expect(await brokenWords(page)).toEqual([]);
    // Nothing is cut instead: the table still fits its page.
    const overflow = await page.evaluate(() => {
      const wrap = document.querySelector('table[aria-label="Phones"]')!.parentElement!;
      return wrap.scrollWidth - wrap.clientWidth;
    });
    expect(overflow).toBeLessThanOrEqual(0);
    expect(errors).toEqual([]);
  });
});
