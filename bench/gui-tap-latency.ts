/**
 * gui-tap-latency: on the phone page in Chromium, the time from a click on the live screen to the first frame the
 * page shows with the tap's result (the Settings app opening), median and p95; against the same tap's adb round trip
 * (`input tap` through the adb server, which returns once the phone has taken it), measured in the same run on the
 * same phone. The simulated phone answers screencap in milliseconds, so this is the engine's and the page's share of
 * the latency, not a real phone's capture time.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Locator, Page } from 'playwright-core';
import WebSocket from 'ws';
import { Adb, readAll } from '../src/main/engine/fleet/android/adb.js';
import { launchChromium } from '../test/e2e/support/browser.js';
import { allocateUntilInUse, startAndroidLab } from './support/android-lab.js';
import { onCleanup } from './support/cleanup.js';
import { detail, fmtMs, fmtRatio, median, percentile, type Benchmark } from './support/report.js';
import { call, OWNER, REQUEST_TIMEOUT_MS } from './support/servers.js';
import { BENCH_BROWSER, BENCH_SCREEN, sized } from './support/smoke.js';

const TAPS = sized(15, 1);
const SCREEN = { model: 'Bench Pixel', ...BENCH_SCREEN };
/** Mean absolute difference per sampled channel (0-255) above which a frame shows something new. */
const CHANGED = 12;

interface Element {
  text: string;
  clickable: boolean;
  bounds: { x: number; y: number; width: number; height: number };
}

/**
 * Installs a watcher in the page: each frame the screen shows is drawn small onto a canvas and compared with the
 * reference taken by `arm()`; the first frame that differs enough records when it was shown. The click's time is
 * the pointerdown's, taken in the page too, so that both ends use the page's clock.
 */
// Plain JavaScript for the page: the bundler's helpers (tsx names functions with __name) do not exist there.
const WATCHER = `(() => {
  const img = document.querySelector('.screen img:not([hidden]), .screen canvas:not([hidden])');
  const canvas = document.createElement('canvas');
  canvas.width = 54;
  canvas.height = 120;
  const g = canvas.getContext('2d', { willReadFrequently: true });
  const sample = () => {
    g.drawImage(img, 0, 0, canvas.width, canvas.height);
    return g.getImageData(0, 0, canvas.width, canvas.height).data;
  };
  const diff = (a, b) => {
    let d = 0;
    for (let i = 0; i < a.length; i += 4) d += Math.abs(a[i] - b[i]) + Math.abs(a[i + 1] - b[i + 1]) + Math.abs(a[i + 2] - b[i + 2]);
    return d / ((a.length / 4) * 3);
  };
  const w = { reference: undefined, downAt: 0, changedAt: 0, actedAt: 0, last: sample() };
  // When the tap's POST .../actions answered, to tell the engine's and phone's share from the screen's.
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) if (e.name.endsWith('/actions') && w.downAt && !w.actedAt) w.actedAt = e.responseEnd;
  }).observe({ type: 'resource', buffered: false });
  window.tapWatch = {
    arm() { w.reference = sample(); w.downAt = 0; w.changedAt = 0; w.actedAt = 0; },
    result: () => ({ downAt: w.downAt, changedAt: w.changedAt, actedAt: w.actedAt }),
    settled() { const now = sample(); const d = diff(now, w.last); w.last = now; return d; },
  };
  window.addEventListener('pointerdown', () => { w.downAt = performance.now(); }, { capture: true });
  new MutationObserver(() => {
    if (!w.reference || w.changedAt || !w.downAt) return;
    if (diff(sample(), w.reference) > ${CHANGED}) w.changedAt = Number(img.dataset.frameAt || performance.now());
  }).observe(img, { attributes: true, attributeFilter: ['data-frames'] });
})()`;

/**
 * Installs a watcher in the page: each frame the screen shows is drawn small onto a canvas and compared with the
 * reference taken by arm(); the first frame that differs enough records when it was shown. The click's time is the
 * pointerdown's, taken in the page too, so that both ends use the page's clock.
 */
const installWatcher = (page: Page) => page.evaluate(WATCHER);
const watch = <T>(page: Page, expression: string) => page.evaluate(`window.tapWatch.${expression}`) as Promise<T>;

/** The centre of the launcher's Settings icon, in the phone's pixels (the launcher in front). */
export async function settingsIcon(device: string, apiKey: string): Promise<{ x: number; y: number }> {
  const { data: elements } = await call<{ data: Element[] }>('GET', `${device}/elements`, { bearer: apiKey });
  const icon = elements.find((e) => e.text === 'Settings' && e.clickable);
  if (!icon) throw new Error('the launcher shows no Settings icon');
  return { x: icon.bounds.x + icon.bounds.width / 2, y: icon.bounds.y + icon.bounds.height / 2 };
}

/**
 * Clicks the Settings icon on the page's live screen `taps` times, the launcher before each: the time from each
 * click to the first frame the page shows with its result, and to the action's answer. Installs the watcher on the
 * screen element showing now (an image for JPEG, a canvas for H.264).
 */
export async function clickToFrame(page: Page, image: Locator, target: { x: number; y: number }, home: () => Promise<unknown>, taps: number, screen = SCREEN): Promise<{ pageMs: number[]; actedMs: number[] }> {
  await installWatcher(page);
  const settle = async () => {
    await sleep(150);
    for (let calm = 0, deadline = performance.now() + 10_000; calm < 3; await sleep(100)) {
      calm = (await watch<number>(page, 'settled()')) < 1 ? calm + 1 : 0;
      if (performance.now() > deadline) throw new Error('the screen did not settle');
    }
  };
  const pageMs: number[] = [];
  const actedMs: number[] = [];
  const shown = async () => Number(await image.getAttribute('data-frames'));
  for (let i = 0; i < taps; i++) {
    // minicap sends a frame only when the screen changes: wait for the launcher's frame before taking the reference,
    // or the reference could still be the app the last tap opened.
    const before = await shown();
    await home();
    for (const deadline = performance.now() + 3000; i > 0 && (await shown()) === before && performance.now() < deadline; await sleep(20));
    await settle();
    await watch(page, 'arm()');
    const box = (await image.boundingBox())!;
    await page.mouse.click(box.x + (target.x / screen.width) * box.width, box.y + (target.y / screen.height) * box.height);
    for (const deadline = performance.now() + 10_000; ; await sleep(5)) {
      const r = await watch<{ downAt: number; changedAt: number; actedAt: number }>(page, 'result()');
      if (r.changedAt && r.downAt) {
        pageMs.push(r.changedAt - r.downAt);
        if (r.actedAt) actedMs.push(r.actedAt - r.downAt);
        break;
      }
      if (performance.now() > deadline) throw new Error('the tap\'s result never showed on the page');
    }
  }
  return { pageMs, actedMs };
}

export const guiTapLatency: Benchmark = {
  name: 'gui-tap-latency',
  title: 'tap on the page\'s live screen to the first frame showing its result, vs the same tap\'s adb round trip, simulated phone',
  async run() {
    const lab = await startAndroidLab('benchtop-bench-gui-tap-', SCREEN);
    const { token } = await call<{ token: string }>('POST', `${lab.engine.api}/auth/login`, { body: OWNER });
    const { id: sessionId } = await call<{ id: string }>('POST', `${lab.engine.api}/sessions`, { bearer: lab.apiKey });
    await allocateUntilInUse(lab, sessionId, REQUEST_TIMEOUT_MS);
    const device = `${lab.engine.api}/sessions/${sessionId}/devices/${encodeURIComponent(lab.serial)}`;
    const home = () => call('POST', `${device}/actions`, { bearer: lab.apiKey, body: { type: 'pressButton', button: 'HOME' } });
    await home();
    const target = await settingsIcon(device, lab.apiKey);

    const browser = await launchChromium(BENCH_BROWSER);
    onCleanup(() => browser.close());
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    await context.addInitScript((t) => sessionStorage.setItem('benchtop.token', t), token);
    const page = await context.newPage();
    await page.goto(`${lab.engine.api.replace(/\/api\/v1$/, '')}/sessions/${sessionId}`);
    const image = page.getByRole('img', { name: /^Screen of/ });
    for (const deadline = performance.now() + 20_000; Number(await image.getAttribute('data-frames')) < 1; await sleep(100)) {
      if (performance.now() > deadline) throw new Error('the page showed no frames');
    }

    const { pageMs, actedMs } = await clickToFrame(page, image, target, home, TAPS);
    await context.close();

    // The same tap straight through the adb server, on the same phone, with nothing else watching it.
    const adb = Adb.createClient({ host: '127.0.0.1', port: lab.adb.port });
    const shell = async (command: string) => readAll(await adb.getDevice(lab.serial).shell(command));
    const adbMs: number[] = [];
    for (let i = 0; i < TAPS; i++) {
      await shell('input keyevent KEYCODE_HOME');
      const t = performance.now();
      await shell(`input tap ${Math.round(target.x)} ${Math.round(target.y)}`);
      adbMs.push(performance.now() - t);
    }

    // The same tap once more, seen by a WebSocket viewer of the engine with no page: the engine's and the phone's share
    // of the delay, without the browser's. (minicap sends frames on change, so the next frame is the tap's.)
    const viewer = new WebSocket(`${lab.engine.api.replace(/^http/, 'ws')}/sessions/${sessionId}/devices/${encodeURIComponent(lab.serial)}/screen?token=${lab.apiKey}&maxSize=900`);
    onCleanup(() => viewer.terminate());
    let lastFrameAt = 0;
    viewer.on('message', (_data, binary) => {
      if (binary) lastFrameAt = performance.now();
    });
    await new Promise((resolve, reject) => viewer.once('open', resolve).once('error', reject));
    const socketMs: number[] = [];
    for (let i = 0; i < TAPS; i++) {
      await shell('input keyevent KEYCODE_HOME');
      await sleep(600);
      const t = performance.now();
      await shell(`input tap ${Math.round(target.x)} ${Math.round(target.y)}`);
      for (const deadline = t + 10_000; lastFrameAt < t; await sleep(2)) {
        if (performance.now() > deadline) throw new Error('the engine sent no frame after the tap');
      }
      socketMs.push(lastFrameAt - t);
    }
    viewer.terminate();
    detail(`adb tap to the engine's next frame on a WebSocket (no page): ${socketMs.map(fmtMs).join(', ')}; median ${fmtMs(median(socketMs))}`);

    const [m, p95, am, ap95] = [median(pageMs), percentile(pageMs, 95), median(adbMs), percentile(adbMs, 95)];
    detail(`click to new frame on the page: ${pageMs.map(fmtMs).join(', ')}`);
    detail(`of which click to the action's answer: ${actedMs.map(fmtMs).join(', ')}`);
    detail(`adb shell input tap round trip: ${adbMs.map(fmtMs).join(', ')}`);
    return [
      {
        benchmark: this.name,
        figure: `click to the tap's frame on the page, median of ${TAPS}`,
        value: fmtMs(m),
        baseline: `${fmtMs(am)} (adb shell input tap round trip, median)`,
        ratio: fmtRatio(m, am),
        target: '<= 250 ms',
        met: m <= 250,
      },
      {
        benchmark: this.name,
        figure: `click to the tap's frame on the page, p95 of ${TAPS}`,
        value: fmtMs(p95),
        baseline: `${fmtMs(ap95)} (adb round trip, p95)`,
        ratio: fmtRatio(p95, ap95),
        target: '<= 500 ms',
        met: p95 <= 500,
      },
    ];
  },
};
