/**
 * Remakes docs/images/phone-page.png, the README's screenshot: the phone page of a session holding a demo phone, with
 * its live screen, at 1440x900 in Debian's Chromium. Run it with `npx tsx test/docs/screenshot.ts` after a change to
 * the page. It starts a demo engine of its own (`npm run serve` with simulated phones, on a private adb server).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startAdbServer } from '../../src/sim/android/index.js';
import { chromiumOrSkip, launchChromium, logIn, originOf } from '../e2e/support/browser.js';
import { call } from '../support/engine.js';
import { waitFor } from '../support/lab.js';
import { startServeProcess } from '../support/serve-process.js';

const OUT = fileURLToPath(new URL('../../docs/images/phone-page.png', import.meta.url));
const OWNER = { email: 'owner@benchtop.local', password: 'screenshot-password' };

if (!chromiumOrSkip()) process.exit(1);
const work = mkdtempSync(join(tmpdir(), 'benchtop-screenshot-'));
const adb = await startAdbServer();
const serve = await startServeProcess({
  ...(adb.env as Record<string, string>),
  BENCHTOP_DATA_DIR: join(work, 'data'),
  BENCHTOP_OWNER_PASSWORD: OWNER.password,
  BENCHTOP_ADB: 'on',
  BENCHTOP_ADB_PORT: String(adb.port),
  BENCHTOP_DEMO_PHONES: '3',
  BENCHTOP_DEMO_IPHONES: '1',
});
const browser = await launchChromium();
try {
  const token = (await call(serve.api, 'POST', '/auth/login', { body: OWNER })).body.token;
  await waitFor('the demo phones in the fleet', async () => {
    const fleet = (await call(serve.api, 'GET', '/fleet/devices', { token })).body.data as Array<{ state: string }>;
    return fleet.filter((p) => p.state === 'device').length === 4;
  }, 30_000);

  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  page.setDefaultTimeout(30_000);
  // As a newcomer would: the Fleet screen, then "Use this phone" on the Pixel 8, which opens its session.
  await logIn(page, originOf(serve.api), OWNER.email, OWNER.password, '/fleet');
  await page.getByRole('table', { name: 'Phones' }).getByRole('button', { name: /^Use this phone: Pixel 8/ }).click();
  await page.waitForURL(/\/sessions\/[0-9a-f-]{36}$/);
  const session = page.url().split('/').pop()!;
  const image = page.getByRole('img', { name: 'Screen of Pixel 8' });
  await image.waitFor();

  // Something on the screen worth showing: Settings, opened through the API as a script would.
  const serial = (await call(serve.api, 'GET', `/sessions/${session}/devices`, { token })).body.data[0].info.serial as string;
  const frames = () => image.getAttribute('data-frames').then(Number);
  await waitFor('the first frame', async () => (await frames()) > 0, 15_000);
  const shown = await frames();
  const launched = await call(serve.api, 'POST', `/sessions/${session}/devices/${encodeURIComponent(serial)}/actions`, {
    token,
    body: { type: 'launchApp', packageName: 'com.android.settings' },
  });
  if (launched.status !== 200) throw new Error(`launching Settings: ${launched.status} ${JSON.stringify(launched.body)}`);
  await waitFor('a frame of Settings', async () => (await frames()) > shown, 15_000);
  // The logcat pane fills as the phone logs; give it a moment so that the page shows some lines.
  await page.waitForTimeout(1500);
  await page.evaluate(() => window.scrollTo(0, 0));
  mkdirSync(join(OUT, '..'), { recursive: true });
  await page.screenshot({ path: OUT });
  console.log(`Wrote ${OUT}`);
} finally {
  await browser.close();
  serve.child.kill('SIGTERM');
  await serve.exited;
  await adb.stop();
  rmSync(work, { recursive: true, force: true });
}
