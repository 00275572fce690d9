/**
 * Files & Apps in Chromium: an APK dropped on the page is hashed in a worker, uploaded with a progress bar, processed,
 * and shows up grouped under its bundle id. Needs the Files and Apps API (issue 6).
 */
import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApk, readZipEntry, writeZip } from '../../src/sim/android/apk.js';
import { OWNER_EMAIL, OWNER_PASSWORD, useEngine } from '../support/engine.js';
import { chromiumOrSkip, sharedChromium, logIn, newContext, originOf, snap } from './support/browser.js';

const hasChromium = chromiumOrSkip();
const SUITE = 'files';
const BUNDLE_ID = 'com.benchtop.e2e.upload';

/** A real installable APK, padded with a stored asset so that its upload takes long enough to watch. */
function paddedApk(): Buffer {
  const small = buildApk({ packageName: BUNDLE_ID, label: 'Upload Demo', versionName: '2.3.0' });
  return writeZip([
    { name: 'AndroidManifest.xml', data: readZipEntry(small, 'AndroidManifest.xml')! },
    { name: 'classes.dex', data: readZipEntry(small, 'classes.dex')! },
    { name: 'assets/padding.bin', data: randomBytes(6 * 1024 * 1024), store: true },
  ]);
}

/** Records every upload phase and progress value the page shows, however briefly. */
async function recordProgress(page: Page): Promise<void> {
  await page.evaluate(() => {
    const seen = ((window as any).__seen = { phases: [] as string[], values: [] as number[] });
    new MutationObserver(() => {
      for (const el of document.querySelectorAll('[aria-label^="Upload of"] [role="status"]')) {
        const t = el.textContent ?? '';
        if (seen.phases.at(-1) !== t) seen.phases.push(t);
      }
      for (const p of document.querySelectorAll<HTMLProgressElement>('[aria-label^="Upload of"] progress')) {
        if (p.hasAttribute('value')) seen.values.push(p.value);
      }
    }).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
  });
}

describe.runIf(hasChromium)('GUI: files and apps', () => {
  let browser: Browser;

  const lab = useEngine();

  beforeAll(async () => {
    browser = await sharedChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('uploads an APK with a progress bar, then lists the file and its app under the bundle id', async () => {
    const page = await (await newContext(browser)).newPage();
    await logIn(page, originOf(lab.t.api), OWNER_EMAIL, OWNER_PASSWORD, '/files');
    await page.getByRole('heading', { name: 'Apps', exact: true }).waitFor();
    await recordProgress(page);
    // A slow uplink, so that the progress bar has something to show.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 3 * 1024 * 1024 });

    await page.getByLabel('Choose app files to upload').setInputFiles({ name: 'upload-demo.apk', mimeType: 'application/vnd.android.package-archive', buffer: paddedApk() });
    const upload = page.getByRole('listitem', { name: 'Upload of upload-demo.apk' });
    await upload.getByRole('progressbar', { name: 'Uploading upload-demo.apk' }).waitFor();
    await snap(page, SUITE, '01-uploading');
    await upload.getByText('Ready').waitFor({ timeout: 30_000 });
    await snap(page, SUITE, '02-ready');

    const seen = await page.evaluate(() => (window as any).__seen as { phases: string[]; values: number[] });
    expect(seen.phases).toEqual(expect.arrayContaining(['Computing SHA-256', 'Uploading', 'Ready']));
    expect(seen.values.some((v) => v > 0 && v < 1), `intermediate progress in ${JSON.stringify(seen.values)}`).toBe(true);

    await page.getByRole('table', { name: 'Files' }).getByRole('row', { name: /upload-demo\.apk/ }).getByText(BUNDLE_ID).waitFor();
    await page.getByRole('article', { name: 'App Upload Demo' }).getByText(BUNDLE_ID).waitFor();
    await snap(page, SUITE, '03-apps');
  });
});
