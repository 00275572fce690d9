/**
 * A team's second week on the phone page, in Chromium at 1440x900 with a phone held: the Files tab shows a 50 MB
 * upload's progress as the Apps tab does (a progress bar with how far it is, not a spinner), a recording shows its
 * time, and axe-core, every rule it runs by default (best practices such as heading order too), finds nothing on any
 * tab. Screenshots go to test-artifacts/e2e/second-week-phone/.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, OWNER_EMAIL, OWNER_PASSWORD } from '../support/engine.js';
import { adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';
import { chromiumOrSkip, logIn, originOf, sharedChromium, snap, watchConsole } from './support/browser.js';

const ready = chromiumOrSkip() && adbOrSkip();
const SUITE = 'second-week-phone';
const TABS = ['Details', 'Logcat', 'Shell', 'Files', 'Apps', 'Assistant'];

/** axe-core's default run (WCAG and best practices: heading order, ARIA roles), as "rule (impact): target". */
async function allAxeViolations(page: Page): Promise<string[]> {
  await page.evaluate(readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8'));
  const result = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: unknown): Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }> }> } }).axe;
    return axe.run(document);
  });
  return result.violations.flatMap((v) => v.nodes.map((n) => `${v.id} (${v.impact}): ${n.target.join(' ')}`));
}

describe.runIf(ready)('GUI: the phone page in a team\'s second week', () => {
  let lab: TestLab;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  const tab = (name: string) => page.getByRole('tab', { name, exact: true });

  beforeAll(async () => {
    [lab, browser] = await Promise.all([startLab([{ model: 'Pixel 7', osVersion: '14' }]), sharedChromium()]);
    const c = client(lab.engine.api);
    const token = await c.login();
    const session = (await c.call('POST', '/sessions', { token })).body.id as string;
    const allocated = (await c.call('POST', `/sessions/${session}/devices`, { token, body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }] } })).body;
    await waitFor('the Pixel 7 in use', async () => {
      const d = (await c.call('GET', `/sessions/${session}/devices/${allocated.id}`, { token })).body;
      return d.status === 'in_use' || undefined;
    });
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    errors = watchConsole(page);
    await logIn(page, originOf(lab.engine.api), OWNER_EMAIL, OWNER_PASSWORD, `/sessions/${session}`);
    await page.getByRole('img', { name: 'Screen of Pixel 7' }).waitFor({ timeout: 30_000 });
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await lab?.stop();
  });

  it('the Files tab shows a 50 MB upload\'s progress, then the file', async () => {
    await tab('Files').click();
    const input = page.getByLabel('Files to upload to /sdcard');
    await page.getByRole('table', { name: 'Files in /sdcard' }).waitFor();
    // Every value the bar shows, however briefly.
    await page.evaluate(() => {
      const seen: number[] = ((window as unknown as { __progress: number[] }).__progress = []);
      new MutationObserver(() => {
        for (const p of document.querySelectorAll<HTMLProgressElement>('progress[aria-label="Uploading big.bin"]')) if (p.hasAttribute('value')) seen.push(p.value);
      }).observe(document.body, { subtree: true, childList: true, attributes: true });
    });
    // An uplink of 20 MB/s, so that the 50 MB take a few seconds, as on an office network.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 20 * 1024 * 1024 });
    // Playwright takes a buffer of up to 50 MB only: a file of 50 MB goes by its path.
    const file = join(mkdtempSync(join(tmpdir(), 'benchtop-e2e-')), 'big.bin');
    writeFileSync(file, Buffer.alloc(50 * 1024 * 1024, 7));
    await input.setInputFiles(file);
    const bar = page.getByRole('progressbar', { name: 'Uploading big.bin' });
    await bar.waitFor();
    await expect.poll(() => bar.evaluate((p) => (p as HTMLProgressElement).value), { timeout: 20_000 }).toBeGreaterThan(0);
    await snap(page, SUITE, '01-files-uploading');
    await page.getByRole('status').filter({ hasText: 'Uploaded big.bin to /sdcard.' }).waitFor({ timeout: 60_000 });
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    const seen = await page.evaluate(() => (window as unknown as { __progress: number[] }).__progress);
    expect(seen.some((v) => v > 0 && v < 1), `intermediate progress in ${JSON.stringify(seen)}`).toBe(true);
    await page.getByRole('table', { name: 'Files in /sdcard' }).getByRole('row', { name: /big\.bin/ }).getByText('50 MB').waitFor();
    await snap(page, SUITE, '02-files-uploaded');
    expect(errors).toEqual([]);
  }, 90_000);

  it('a recording shows how long it has run, of the most the phone records, and nothing once it is saved', async () => {
    const view = page.getByRole('group', { name: 'View' });
    const boxes = async () => Promise.all((await page.getByRole('toolbar').getByRole('button').all()).map(async (b) => Object.values((await b.boundingBox())!).map(Math.round)));
    const before = await boxes();
    const clicked = Date.now();
    await view.getByRole('button', { name: 'Record screen' }).click();
    const timer = page.getByRole('timer', { name: 'Recording time' });
    await view.getByRole('button', { name: 'Stop and download recording' }).waitFor();
    // Nothing on the toolbar moves when the Record button's label changes (issue 44.2).
    expect(await boxes()).toEqual(before);
    // The time shown never runs ahead of the time since the click (a loaded machine may take seconds to get here),
    // and it counts on.
    const shown = async () => {
      const text = await timer.textContent();
      const [, minutes, seconds] = /^Recording (\d+):(\d\d) of 3:00$/.exec(text ?? '') ?? [];
      if (seconds === undefined) throw new Error(`the timer reads "${text}"`);
      const value = Number(minutes) * 60 + Number(seconds);
      expect(value).toBeLessThanOrEqual((Date.now() - clicked) / 1000 + 1);
      return value;
    };
    const first = await shown();
    await expect.poll(shown, { timeout: 10_000 }).toBeGreaterThanOrEqual(first + 2);
    await snap(page, SUITE, '03-recording');
    const [download] = await Promise.all([page.waitForEvent('download'), view.getByRole('button', { name: 'Stop and download recording' }).click()]);
    expect(download.suggestedFilename()).toMatch(/\.mp4$/);
    await timer.waitFor({ state: 'detached' });
  }, 60_000);

  it.each(TABS)('axe finds nothing on the %s tab with the phone held', async (name) => {
    await tab(name).click();
    await page.getByRole('tabpanel', { name }).waitFor();
    await snap(page, SUITE, `04-axe-${name.toLowerCase()}`);
    expect(await allAxeViolations(page)).toEqual([]);
  });
});
