/**
 * The phone page's H.264 live screen in Debian's Chromium, against a real engine, adb server and a simulated phone
 * whose screenrecord encodes with libx264: WebCodecs decodes it into a canvas that follows the screen, takes taps at
 * the right pixels, keeps its picture through a rotation and through screenrecord's restart at its time limit
 * (shortened to 3 s here), starts a second viewer within a second, and a page without WebCodecs falls back to minicap
 * by itself. Screenshots go to test-artifacts/e2e/h264-screen/.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, OWNER_EMAIL, OWNER_PASSWORD } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';
import { chromiumOrSkip, sharedChromium, logIn, newContext, originOf, snap, watchConsole } from './support/browser.js';

const ready = chromiumOrSkip() && adbOrSkip();
const SUITE = 'h264-screen';
const PHONE = { model: 'Pixel 7', width: 1080, height: 2400, density: 420 };
const TIME_LIMIT_S = 3;

/** Records, in the page, when the screen socket was opened: a new viewer's time to its first picture starts there. */
const STAMP_SOCKET = () => {
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols);
      if (String(url).includes('/screen')) (window as unknown as { screenSocketAt: number }).screenSocketAt = performance.now();
    }
  };
};

describe.runIf(ready)('GUI: the H.264 live screen', () => {
  let lab: TestLab;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let errors: string[];
  let token: string;
  let sessionId: string;
  let serial: string;
  const timeLimit = process.env.BENCHTOP_SCREENRECORD_TIME_LIMIT;
  const c = () => client(lab.engine.api);
  const screenOf = (p: Page) => p.getByRole('img', { name: 'Screen of Pixel 7' });
  const framesOf = (p: Page) => screenOf(p).getAttribute('data-frames').then(Number);
  /** A digest of the canvas's pixels: it changes when the picture does. */
  const pixels = (p: Page) => screenOf(p).evaluate((canvas: HTMLCanvasElement) => {
    const { data } = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height);
    let sum = 0;
    for (let i = 0; i < data.length; i += 4) sum = (sum * 31 + data[i]! + data[i + 1]! * 3 + data[i + 2]! * 7) % 1_000_000_007;
    return sum;
  });
  const act = (body: unknown) => c().call('POST', `/sessions/${sessionId}/devices/${encodeURIComponent(serial)}/actions`, { token, body });
  const phone = () => lab.phone(serial);

  beforeAll(async () => {
    process.env.BENCHTOP_SCREENRECORD_TIME_LIMIT = String(TIME_LIMIT_S);
    [lab, browser] = await Promise.all([startLab([PHONE]), sharedChromium()]);
    token = await c().login();
    ({ session: sessionId, serial } = await allocateInUse(c(), token, 'Pixel 7'));
    context = await newContext(browser);
    await context.addInitScript(STAMP_SOCKET);
    page = await context.newPage();
    errors = watchConsole(page);
    await logIn(page, originOf(lab.engine.api), OWNER_EMAIL, OWNER_PASSWORD, `/sessions/${sessionId}`);
  }, 60_000);
  afterAll(async () => {
    if (timeLimit === undefined) delete process.env.BENCHTOP_SCREENRECORD_TIME_LIMIT;
    else process.env.BENCHTOP_SCREENRECORD_TIME_LIMIT = timeLimit;
    await browser?.close();
    await lab?.stop();
  });

  it('plays screenrecord\'s H.264 in a canvas, says so on the status line, and the canvas follows the phone\'s screen', async () => {
    await expect.poll(() => framesOf(page), { timeout: 20_000 }).toBeGreaterThan(0);
    expect(await screenOf(page).evaluate((el) => el.tagName)).toBe('CANVAS');
    await page.getByText(/^screenrecord · H\.264 · /).waitFor();
    expect(await page.getByRole('button', { name: 'H.264' }).getAttribute('aria-pressed')).toBe('true');
    const before = await pixels(page);
    // The Clock's stopwatch: a screen that changes on every refresh, from here to the restart below.
    await phone().shell('am start -n com.android.deskclock/.DeskClock');
    await expect.poll(() => pixels(page), { timeout: 10_000 }).not.toBe(before);
    await page.getByText(/^screenrecord · H\.264 · \d+(\.\d)? fps$/).waitFor();
    await snap(page, SUITE, '01-h264-screen');
  });

  it('keeps the picture through screenrecord\'s restart at its time limit: frames keep coming, the gap measured', async () => {
    // Every picture's arrival in the page over more than a time limit, so that a restart falls inside.
    const gaps = await screenOf(page).evaluate(async (canvas: HTMLCanvasElement, ms: number) => {
      const times: number[] = [];
      const start = performance.now();
      const end = start + ms;
      let last = canvas.dataset.frameAt;
      while (performance.now() < end) {
        await new Promise(requestAnimationFrame);
        if (canvas.dataset.frameAt !== last) times.push(Number((last = canvas.dataset.frameAt)));
      }
      // The window's two ends count as gaps too: pictures that stopped at the restart would leave a long last one.
      const edges = [start, ...times, performance.now()];
      return edges.slice(1).map((t, i) => t - edges[i]!);
    }, (TIME_LIMIT_S + 1) * 1000);
    const worst = Math.max(...gaps);
    console.log(`H.264 in the page over a restart: ${gaps.length - 1} pictures, longest gap ${worst.toFixed(0)} ms`);
    // Frames keep coming over the whole window, the restart included, and never a blank: the bench holds the gap to
    // 300 ms on a quiet machine; here, beside two other test workers, a page drew as few as 4 pictures in 4 s, so only
    // far from a blank (a gap under 1.5 s from the window's start to its end).
    expect(gaps.length - 1).toBeGreaterThanOrEqual(3);
    expect(worst).toBeLessThan(1500);
    expect(await page.getByText(/^screenrecord · H\.264/).count()).toBe(1);
  });

  it('a click on the canvas taps the phone at the same point of its screen', async () => {
    await act({ type: 'pressButton', button: 'HOME' });
    const box = (await screenOf(page).boundingBox())!;
    await page.mouse.click(box.x + box.width * 0.25, box.y + box.height * 0.75);
    const tap = await waitFor('the tap', () => phone().state.lastTap);
    expect(Math.abs(tap.x - 270)).toBeLessThan(12);
    expect(Math.abs(tap.y - 1800)).toBeLessThan(12);
  });

  it('a rotation keeps the picture: the canvas turns to landscape and goes on showing the screen', async () => {
    const shown = await framesOf(page);
    await page.getByRole('button', { name: 'Rotate' }).click();
    await expect.poll(() => screenOf(page).evaluate((c: HTMLCanvasElement) => c.width > c.height), { timeout: 10_000 }).toBe(true);
    expect(await framesOf(page)).toBeGreaterThan(shown);
    const box = (await screenOf(page).boundingBox())!;
    expect(box.width).toBeGreaterThan(box.height);
    await snap(page, SUITE, '02-landscape');
    await page.getByRole('button', { name: 'Rotate' }).click();
    await expect.poll(() => screenOf(page).evaluate((c: HTMLCanvasElement) => c.width < c.height), { timeout: 10_000 }).toBe(true);
  });

  it('a second viewer that joins mid-stream sees the screen within a second of opening its socket', async () => {
    await phone().shell('am start -n com.android.deskclock/.DeskClock');
    const second = await context.newPage();
    // The page counts from its first picture on; the socket's opening was stamped by STAMP_SOCKET.
    await second.addInitScript(() => {
      new MutationObserver((_, observer) => {
        const canvas = document.querySelector('canvas[data-frames]');
        if (!canvas || canvas.getAttribute('data-frames') === '0') return;
        (window as unknown as { firstPictureAt: number }).firstPictureAt = performance.now();
        observer.disconnect();
      }).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-frames'] });
    });
    await logIn(second, originOf(lab.engine.api), OWNER_EMAIL, OWNER_PASSWORD, `/sessions/${sessionId}`);
    await expect.poll(() => framesOf(second), { timeout: 10_000 }).toBeGreaterThan(0);
    const ms = await second.evaluate(() => {
      const w = window as unknown as { firstPictureAt: number; screenSocketAt: number };
      return w.firstPictureAt - w.screenSocketAt;
    });
    console.log(`second viewer: first picture ${ms.toFixed(0)} ms after its socket opened`);
    // The 1 s target is `npm run bench live-screen`'s figure; here, the keyframe set must come at once rather than at
    // the encoder's next keyframe (10 s away), with room for a loaded machine.
    expect(ms).toBeLessThan(3000);
    await second.close();
  }, 60_000);

  it('a page without WebCodecs falls back to minicap by itself, and says why', async () => {
    const plain = await newContext(browser);
    await plain.addInitScript(() => delete (window as { VideoDecoder?: unknown }).VideoDecoder);
    const other = await plain.newPage();
    await logIn(other, originOf(lab.engine.api), OWNER_EMAIL, OWNER_PASSWORD, `/sessions/${sessionId}`);
    // A second feed of the phone (minicap, beside the H.264 one) starts from nothing: seconds on a loaded machine.
    await expect.poll(() => framesOf(other), { timeout: 45_000 }).toBeGreaterThan(0);
    expect(await screenOf(other).evaluate((el) => el.tagName)).toBe('IMG');
    await other.getByText(/^minicap · JPEG · .*\(this browser cannot decode H\.264\)$/).waitFor();
    await snap(other, SUITE, '03-no-webcodecs');
    await plain.close();
    expect(errors).toEqual([]);
  }, 60_000);

  it('a page whose decoder refuses the phone\'s stream (though it passed the probe) switches to JPEG by itself, and says why', async () => {
    const refusing = await newContext(browser);
    // A decoder that says yes to the probe and then fails the real stream, as a browser without that profile does.
    await refusing.addInitScript(() => {
      const Real = VideoDecoder;
      class Refusing extends Real {
        private readonly fail: (e: DOMException) => void;
        constructor(init: VideoDecoderInit) {
          super(init);
          this.fail = init.error;
        }
        override configure(): void {
          queueMicrotask(() => this.fail(new DOMException('Unsupported configuration', 'NotSupportedError')));
        }
      }
      (window as { VideoDecoder: unknown }).VideoDecoder = Refusing;
    });
    const other = await refusing.newPage();
    await logIn(other, originOf(lab.engine.api), OWNER_EMAIL, OWNER_PASSWORD, `/sessions/${sessionId}`);
    await expect.poll(() => framesOf(other), { timeout: 45_000 }).toBeGreaterThan(0);
    expect(await screenOf(other).evaluate((el) => el.tagName)).toBe('IMG');
    await other.getByText(/^minicap · JPEG · .*\(the browser's decoder refused avc1\.[0-9A-Fa-f]{6}: Unsupported configuration\)$/).waitFor();
    await refusing.close();
  }, 60_000);
});
