/**
 * The iOS fleet, against a simulated iPhone behind a simulated usbmuxd (each in its own process, the engine in a
 * third, as `npm run serve` starts it). Three figures, each against a baseline measured in the same run:
 *
 * - Allocation overhead: POST .../devices to in_use, minus what the phone's own calls take (the WDA and
 *   installation_proxy calls of preparing it, made directly from here through usbmuxd). Target < 200 ms.
 * - GET .../screenshot against WDA's GET /screenshot through a usbmuxd tunnel, interleaved. Target <= 1.2x.
 * - Live-screen frames per second to a WebSocket viewer against the frames per second WDA's MJPEG server sends
 *   straight to a tunnel. Target >= 0.9x.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import WebSocket from 'ws';
import { jpegSize } from '../src/main/engine/domain/image-size.js';
import { IosDriver } from '../src/main/engine/fleet/ios/driver.js';
import { parseUsbmuxdAddress } from '../src/main/engine/fleet/ios/usbmux.js';
import { WdaClient } from '../src/main/engine/fleet/ios/wda-client.js';
import { onCleanup, tempDir } from './support/cleanup.js';
import { nodeScript } from './support/bundle.js';
import { startChild } from './support/processes.js';
import { detail, fmtMs, fmtRatio, median, percentile, type Benchmark, type Figure } from './support/report.js';
import { call, engineEnv, ownerApiKey, REQUEST_TIMEOUT_MS, ROOT, SERVE_ARGS } from './support/servers.js';
import { sized } from './support/smoke.js';

const IPHONE_SCRIPT = fileURLToPath(new URL('./support/iphone-process.ts', import.meta.url));
const START_TIMEOUT_MS = 30_000;
const ALLOCATIONS = sized(10, 1);
const SCREENSHOTS = sized(30, 1);
const WARMUP = sized(5, 0);
const WARMUP_MS = sized(1000, 100);
const WINDOW_MS = sized(5000, 500);

interface Device {
  id: string;
  status: string;
  info: { serial?: string };
}

const fmtFps = (fps: number) => `${fps.toFixed(1)} frames/s`;

/** Frames per second read from WDA's MJPEG server through a usbmuxd tunnel over the window, after a warm-up. */
async function mjpegFps(driver: IosDriver): Promise<number> {
  const stop = new AbortController();
  let frames = 0;
  let first = () => {};
  const firstFrame = new Promise<void>((resolve) => (first = resolve));
  const counting = (async () => {
    for await (const frame of driver.liveFrames(stop.signal)) if (jpegSize(frame.data) && ++frames === 1) first();
  })().catch(() => undefined);
  // Counted from the first frame on: the stream's start is not its rate.
  await firstFrame;
  await sleep(WARMUP_MS);
  const before = frames;
  const start = performance.now();
  await sleep(WINDOW_MS);
  const fps = (frames - before) / ((performance.now() - start) / 1000);
  stop.abort();
  await counting;
  return fps;
}

async function viewerFps(url: string): Promise<number> {
  const socket = new WebSocket(url);
  onCleanup(() => socket.terminate());
  let frames = 0;
  await new Promise<void>((resolve, reject) => {
    socket.on('message', (_data, binary) => {
      if (binary && ++frames === 1) resolve();
    });
    socket.once('error', reject);
  });
  await sleep(WARMUP_MS);
  const before = frames;
  const start = performance.now();
  await sleep(WINDOW_MS);
  const fps = (frames - before) / ((performance.now() - start) / 1000);
  socket.close();
  return fps;
}

export const ios: Benchmark = {
  name: 'ios',
  title: 'iOS: allocation overhead, screenshot via the API vs WDA, live screen vs WDA MJPEG (simulated iPhone, usbmuxd)',
  async run() {
    const phoneProcess = startChild(process.execPath, nodeScript(IPHONE_SCRIPT), { cwd: ROOT, env: process.env });
    const [, muxAddress, udid] = await phoneProcess.waitForOutput(/Simulated usbmuxd on (\S+) with (\S+)/, START_TIMEOUT_MS);
    const address = parseUsbmuxdAddress(muxAddress!);
    const env = { ...engineEnv(tempDir('benchtop-bench-ios-'), 0), BENCHTOP_USBMUXD_ADDRESS: muxAddress!, BENCHTOP_SCREEN_MAX_FPS: '0' };
    const engineProcess = startChild(process.execPath, SERVE_ARGS, { cwd: ROOT, env });
    const [, url] = await engineProcess.waitForOutput(/Benchtop is serving (http:\/\/\S+)\/api\/v1/, START_TIMEOUT_MS);
    const api = `${url}/api/v1`;
    const apiKey = await ownerApiKey(api);
    const free = async () => {
      const deadline = performance.now() + START_TIMEOUT_MS;
      for (;;) {
        const { data } = await call<{ data: Array<{ serial: string; state: string; held: boolean }> }>('GET', `${api}/fleet/devices`, { bearer: apiKey });
        if (data.some((d) => d.serial === udid && d.state === 'device' && !d.held)) return;
        if (performance.now() > deadline) throw new Error(`${udid} was not free in time: ${JSON.stringify(data)}`);
        await sleep(5);
      }
    };
    await free();
    const wda = new WdaClient(address, udid!);
    onCleanup(() => wda.close());
    const direct = new IosDriver(address, udid!, wda);
    const { id: sessionId } = await call<{ id: string }>('POST', `${api}/sessions`, { bearer: apiKey });
    const devices = `${api}/sessions/${sessionId}/devices`;

    // ---- allocation ----
    const viaApi: number[] = [];
    const viaPhone: number[] = [];
    for (let i = 0; i < ALLOCATIONS + 1; i++) {
      const start = performance.now();
      const allocation = await call<Device>('POST', devices, { bearer: apiKey, body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'ios' }] } });
      for (;;) {
        const { data } = await call<{ data: Device[] }>('GET', devices, { bearer: apiKey });
        const row = data.find((d) => d.id === allocation.id);
        if (row?.status === 'in_use') break;
        if (row?.status !== 'provisioning') throw new Error(`the allocation went ${row?.status}`);
        if (performance.now() - start > REQUEST_TIMEOUT_MS) throw new Error('not in_use in time');
      }
      const ms = performance.now() - start;
      await call('POST', `${devices}/${udid}/release`, { bearer: apiKey });
      await free();
      const t = performance.now();
      await direct.prepare();
      const own = performance.now() - t;
      if (i === 0) continue;
      viaApi.push(ms);
      viaPhone.push(own);
    }
    const overhead = median(viaApi) - median(viaPhone);
    detail(`POST to in_use: median ${fmtMs(median(viaApi))} (p95 ${fmtMs(percentile(viaApi, 95))}); the phone's own calls (WDA + installation_proxy, direct): median ${fmtMs(median(viaPhone))}`);

    // ---- screenshot ----
    const allocation = await call<Device>('POST', devices, { bearer: apiKey, body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'ios' }] } });
    for (;;) {
      const { data } = await call<{ data: Device[] }>('GET', devices, { bearer: apiKey });
      if (data.find((d) => d.id === allocation.id)?.status === 'in_use') break;
    }
    const shotUrl = new URL(`${devices}/${udid}/screenshot`);
    // The same HTTP client on both sides (undici, one kept-alive connection), so that the figure is what the API
    // adds and not what fetch() costs over a bare Pool.
    const apiClient = new Pool(shotUrl.origin, { connections: 1 });
    onCleanup(() => apiClient.destroy());
    const apiShots: number[] = [];
    const wdaShots: number[] = [];
    for (let i = 0; i < WARMUP + SCREENSHOTS; i++) {
      let t = performance.now();
      const res = await apiClient.request({ method: 'GET', path: shotUrl.pathname, headers: { authorization: `Bearer ${apiKey}` } });
      const png = Buffer.from(await res.body.arrayBuffer());
      if (res.statusCode !== 200 || png.readUInt32BE(16) !== 750) throw new Error(`screenshot answered ${res.statusCode}`);
      const a = performance.now() - t;
      t = performance.now();
      const wdaPng = await direct.screenshot();
      const b = performance.now() - t;
      if (wdaPng.readUInt32BE(16) !== png.readUInt32BE(16)) throw new Error('the API and WDA sent screenshots of other sizes');
      if (i < WARMUP) continue;
      apiShots.push(a);
      wdaShots.push(b);
    }
    detail(`GET .../screenshot median ${fmtMs(median(apiShots))}; WDA /screenshot through a tunnel median ${fmtMs(median(wdaShots))}`);
    // The simulated WDA answers from a cached PNG in about a millisecond; a real one takes 100 ms or more to capture,
    // so the ratio overstates what the API adds: the difference is the figure that carries over.
    detail(`what the API adds: ${fmtMs(median(apiShots) - median(wdaShots))} per screenshot`);

    // ---- live screen ----
    // The Clock's stopwatch in front, so that every picture differs (as the Android benchmarks run theirs): the lab
    // does not resend a still screen that WDA's MJPEG repeats, and a still screen would measure nothing.
    await wda.command('POST', '/wda/apps/launch', { bundleId: 'com.apple.mobiletimer' });
    const wdaFps = await mjpegFps(direct);
    const wsUrl = `${api.replace(/^http/, 'ws')}/sessions/${sessionId}/devices/${udid}/screen?token=${apiKey}`;
    const apiFps = await viewerFps(wsUrl);
    detail(`WDA MJPEG straight through a tunnel: ${fmtFps(wdaFps)}; one WebSocket viewer: ${fmtFps(apiFps)}`);
    if (!(apiFps > 0)) throw new Error(`the viewer got no picture in ${WINDOW_MS} ms while WDA's MJPEG sent ${fmtFps(wdaFps)}: the Clock's stopwatch did not move the screen`);

    const figures: Figure[] = [
      {
        benchmark: this.name,
        figure: 'allocation overhead (POST to in_use minus the phone\'s calls)',
        value: fmtMs(overhead),
        baseline: `phone's own calls median ${fmtMs(median(viaPhone))}`,
        ratio: fmtRatio(median(viaApi), median(viaPhone)),
        target: '< 200 ms',
        met: overhead < 200,
      },
      {
        benchmark: this.name,
        figure: 'GET .../screenshot, sequential',
        value: `median ${fmtMs(median(apiShots))} (p95 ${fmtMs(percentile(apiShots, 95))})`,
        baseline: `WDA /screenshot median ${fmtMs(median(wdaShots))}`,
        ratio: fmtRatio(median(apiShots), median(wdaShots)),
        target: '<= 1.20x of WDA',
        met: median(apiShots) / median(wdaShots) <= 1.2,
      },
      {
        benchmark: this.name,
        figure: 'live screen frames/s to one viewer',
        value: fmtFps(apiFps),
        baseline: `WDA MJPEG ${fmtFps(wdaFps)}`,
        ratio: fmtRatio(apiFps, wdaFps),
        target: '>= 0.90x',
        met: apiFps / wdaFps >= 0.9,
      },
    ];
    return figures;
  },
};
