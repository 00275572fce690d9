/**
 * The GUI's benchmarks, in Debian Chromium against the engine as `npm run serve` runs it:
 * - gui-bundle: the renderer's initial download, gzipped, against a minimal React page built by the same Vite config.
 * - fleet-screen: time to an interactive Fleet screen listing 100 phones, against the browser fetching the same
 *   data on a page without the app.
 * - gui-live-screen: frames per second the page shows on a phone's live screen, against the frames the engine sends
 *   a fast WebSocket viewer over the same window.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import WebSocket from 'ws';
import { loadConfig } from '../src/main/engine/config.js';
import { startAdbServer } from '../src/sim/android/index.js';
import { CHROMIUM, CHROMIUM_ARGS } from '../test/e2e/support/browser.js';
import { allocateUntilInUse, startAndroidLab } from './support/android-lab.js';
import { onCleanup, tempDir } from './support/cleanup.js';
import { startChild } from './support/processes.js';
import { detail, fmtMs, fmtRatio, median, type Benchmark } from './support/report.js';
import { call, engineEnv, OWNER, REQUEST_TIMEOUT_MS, ROOT, SERVE_ARGS } from './support/servers.js';

const fmtKb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

/** The gzipped bytes of what index.html loads at once (lazy chunks are fetched later, when used). */
function initialGzipBytes(outDir: string): { initial: number; total: number } {
  const html = readFileSync(join(outDir, 'index.html'), 'utf8');
  const gz = (file: string) => gzipSync(readFileSync(join(outDir, file))).length;
  const initial = [...html.matchAll(/(?:src|href)="\/(assets\/[^"]+)"/g)].reduce((n, [, file]) => n + gz(file!), gz('index.html'));
  const total = readdirSync(join(outDir, 'assets')).reduce((n, file) => n + gz(`assets/${file}`), gz('index.html'));
  return { initial, total };
}

async function viteBuild(root: string | undefined, outDir: string): Promise<void> {
  const { build } = await import('vite');
  await build({ configFile: join(ROOT, 'vite.renderer.config.ts'), ...(root ? { root } : {}), build: { outDir, emptyOutDir: true }, logLevel: 'error' });
}

export const guiBundle: Benchmark = {
  name: 'gui-bundle',
  title: 'renderer bundle, gzipped, vs a minimal React page built the same way',
  async run() {
    const app = tempDir('benchtop-bench-gui-');
    const minimal = tempDir('benchtop-bench-react-');
    await viteBuild(undefined, app);
    await viteBuild(join(ROOT, 'bench/support/minimal-react'), minimal);
    const a = initialGzipBytes(app);
    const m = initialGzipBytes(minimal);
    detail(`renderer: ${fmtKb(a.initial)} at first load, ${fmtKb(a.total)} with every lazy chunk (the terminal)`);
    detail(`minimal React page: ${fmtKb(m.initial)}`);
    const TARGET = 2.5;
    return [{
      benchmark: this.name,
      figure: 'first-load JS + CSS + HTML, gzipped',
      value: fmtKb(a.initial),
      baseline: `${fmtKb(m.initial)} (minimal React 19 page)`,
      ratio: fmtRatio(a.initial, m.initial),
      target: `<= ${TARGET.toFixed(2)}x`,
      met: a.initial / m.initial <= TARGET,
    }];
  },
};

async function launch(): Promise<Browser> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
  onCleanup(() => browser.close());
  return browser;
}

/** A cold browser profile already signed in: the token is in the tab's sessionStorage, as after a login. */
async function signedInContext(browser: Browser, token: string): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
  await context.addInitScript((t) => sessionStorage.setItem('benchtop.token', t), token);
  return context;
}

/** 100 simulated phones on one host; once providers (issue 24) land, 100 across two hosts. */
const PHONES = 100;
const RUNS = 5;

export const fleetScreen: Benchmark = {
  name: 'fleet-screen',
  title: `time to an interactive Fleet screen listing ${PHONES} phones, in Chromium, vs fetching the same data without the app`,
  async run() {
    const adb = await startAdbServer();
    onCleanup(() => adb.stop());
    const env = {
      ...engineEnv(tempDir('benchtop-bench-fleet-'), 0),
      BENCHTOP_ADB: '',
      BENCHTOP_ADB_HOST: '127.0.0.1',
      BENCHTOP_ADB_PORT: String(adb.port),
      BENCHTOP_DEMO_PHONES: String(PHONES),
    };
    const child = startChild(process.execPath, SERVE_ARGS, { cwd: ROOT, env });
    const [, origin] = await child.waitForOutput(/Benchtop is serving (http:\/\/\S+)\/api\/v1/, 120_000);
    const api = `${origin}/api/v1`;
    const { token } = await call<{ token: string }>('POST', `${api}/auth/login`, { body: OWNER });
    for (const deadline = performance.now() + 120_000; ;) {
      const { data } = await call<{ data: Array<{ state: string; name: string }> }>('GET', `${api}/fleet/devices`, { bearer: token });
      if (data.filter((d) => d.state === 'device' && d.name).length === PHONES) break;
      if (performance.now() > deadline) throw new Error(`${PHONES} phones did not attach`);
      await sleep(200);
    }

    const browser = await launch();
    const app: number[] = [];
    const bare: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const context = await signedInContext(browser, token);
      const page = await context.newPage();
      const start = performance.now();
      await page.goto(`${origin}/fleet`);
      await page.waitForFunction((n) => document.querySelectorAll('table[aria-label="Phones"] tbody tr').length === n, PHONES, { polling: 'raf' });
      // Interactive: the page answers a click on the navigation at once (no long task still running).
      await page.getByRole('link', { name: 'Sessions' }).click({ trial: true });
      app.push(performance.now() - start);
      await context.close();

      const baseline = await browser.newContext();
      const raw = await baseline.newPage();
      const t = performance.now();
      await raw.goto(`${api}/health`);
      await raw.evaluate(async (bearer) => {
        const headers = { authorization: `Bearer ${bearer}` };
        await Promise.all(['/api/v1/fleet/devices', '/api/v1/fleet/hosts'].map((p) => fetch(p, { headers }).then((r) => r.json())));
      }, token);
      bare.push(performance.now() - t);
      await baseline.close();
    }
    const a = median(app);
    const b = median(bare);
    detail(`Fleet screen with ${PHONES} phones, cold profile: ${app.map(fmtMs).join(', ')}`);
    detail(`no app, the same two requests: ${bare.map(fmtMs).join(', ')}`);
    return [{
      benchmark: this.name,
      figure: `interactive Fleet screen, ${PHONES} phones (median of ${RUNS})`,
      value: fmtMs(a),
      baseline: `${fmtMs(b)} (a page fetching /fleet/devices and /fleet/hosts)`,
      ratio: fmtRatio(a, b),
      target: '<= 1000 ms',
      met: a <= 1000,
    }];
  },
};

const WINDOW_MS = 5000;
const DEFAULT_SCREEN_MAX_FPS = loadConfig({}).screenMaxFps;
const SCREEN = { model: 'Bench Pixel', width: 1080, height: 2400, density: 420 };

export const guiLiveScreen: Benchmark = {
  name: 'gui-live-screen',
  title: 'live screen frames shown by the page vs frames the engine sends a fast viewer, default frame cap, simulated phone',
  async run() {
    // The engine's default frame cap, as a user's live screen has it: an uncapped feed outruns any display's refresh.
    const lab = await startAndroidLab('benchtop-bench-gui-screen-', SCREEN, { BENCHTOP_SCREEN_MAX_FPS: String(DEFAULT_SCREEN_MAX_FPS) });
    const { token } = await call<{ token: string }>('POST', `${lab.engine.api}/auth/login`, { body: OWNER });
    const { id: sessionId } = await call<{ id: string }>('POST', `${lab.engine.api}/sessions`, { bearer: lab.apiKey });
    await allocateUntilInUse(lab, sessionId, REQUEST_TIMEOUT_MS);
    // minicap sends only changed frames: the Clock's stopwatch changes the screen on every refresh.
    await lab.adb.run(['-s', lab.serial, 'shell', 'input keyevent KEYCODE_WAKEUP; wm dismiss-keyguard; am start -n com.android.deskclock/.DeskClock']);

    const browser = await launch();
    const page = await (await signedInContext(browser, token)).newPage();
    await page.goto(`${lab.engine.api.replace(/\/api\/v1$/, '')}/sessions/${sessionId}`);
    const frames = () => page.getByRole('img', { name: /^Screen of/ }).getAttribute('data-frames').then(Number);
    for (const deadline = performance.now() + 20_000; (await frames()) < 5; await sleep(100)) {
      if (performance.now() > deadline) throw new Error('the page showed no frames');
    }

    const viewer = new WebSocket(`${lab.engine.api.replace(/^http/, 'ws')}/sessions/${sessionId}/devices/${encodeURIComponent(lab.serial)}/screen?token=${lab.apiKey}`);
    onCleanup(() => viewer.terminate());
    let sent = 0;
    viewer.on('message', (_data, binary) => {
      if (binary) sent++;
    });
    await new Promise((resolve, reject) => viewer.once('open', resolve).once('error', reject));
    await sleep(1000);
    const [shown0, sent0, t0] = [await frames(), sent, performance.now()];
    await sleep(WINDOW_MS);
    const [shown1, sent1, t1] = [await frames(), sent, performance.now()];
    const seconds = (t1 - t0) / 1000;
    const pageFps = (shown1 - shown0) / seconds;
    const engineFps = (sent1 - sent0) / seconds;
    detail(`page shows ${pageFps.toFixed(1)} frames/s; the engine sends ${engineFps.toFixed(1)} frames/s to a fast viewer`);
    return [{
      benchmark: this.name,
      figure: 'frames/s shown in the page',
      value: `${pageFps.toFixed(0)} frames/s`,
      baseline: `${engineFps.toFixed(0)} frames/s (sent to a fast WebSocket viewer, same window)`,
      ratio: fmtRatio(pageFps, engineFps),
      target: '>= 0.80x',
      met: pageFps / engineFps >= 0.8,
    }];
  },
};
