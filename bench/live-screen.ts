/**
 * Target: a viewer of GET /sessions/{id}/devices/{serial}/screen (a WebSocket) receives at least 0.8x the frames per
 * second the phone itself can deliver. The baseline is the phone's own rate: sequential screencaps through the same
 * adb server with the engine's driver, in this process, over the same 5 s. Two viewers share one capture loop, so
 * each should still get about the baseline rate.
 *
 * The phone is simulated, in its own process, on a private adb server; the engine runs in its own process, as
 * `npm run serve` starts it. The screen does not change, so the phone encodes its PNG once: what is measured is
 * the transport (adb, the engine, the WebSocket), not PNG encoding, where a real phone spends most of a screencap.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { AndroidFleet } from '../src/main/engine/fleet/android/android-fleet.js';
import { allocateUntilInUse, startAndroidLab } from './support/android-lab.js';
import { onCleanup } from './support/cleanup.js';
import { detail, fmtRatio, type Benchmark, type Figure } from './support/report.js';
import { call, REQUEST_TIMEOUT_MS } from './support/servers.js';

const WINDOW_MS = 5000;
const WARMUP_MS = 1000;
const TARGET_RATIO = 0.8;
/** A Pixel 7-sized display, as in the screenshot benchmark, so that a frame is as large as a real home screen's. */
const PHONE = { model: 'Bench Pixel', width: 1080, height: 2400, density: 420 };

const fmtFps = (fps: number) => `${fps.toFixed(0)} frames/s`;

/** Sequential screencaps with the engine's own driver: the most frames per second this phone can give. */
async function directFps(adbPort: number, serial: string): Promise<number> {
  const driver = new AndroidFleet({ host: '127.0.0.1', port: adbPort }, () => undefined).driver(serial);
  const warm = performance.now() + WARMUP_MS;
  while (performance.now() < warm) await driver.screenshot();
  let frames = 0;
  const start = performance.now();
  while (performance.now() - start < WINDOW_MS) {
    await driver.screenshot();
    frames++;
  }
  return frames / ((performance.now() - start) / 1000);
}

/** Frames per second each of `viewers` WebSockets receives over the window, after a warm-up. */
async function viewerFps(url: string, viewers: number): Promise<number[]> {
  const sockets = Array.from({ length: viewers }, () => new WebSocket(url));
  const counts = sockets.map(() => 0);
  onCleanup(() => sockets.forEach((s) => s.terminate()));
  await Promise.all(
    sockets.map((socket, i) => new Promise<void>((resolve, reject) => {
      socket.on('message', (_data, binary) => {
        if (binary) counts[i]!++;
      });
      socket.once('open', () => resolve());
      socket.once('error', reject);
    })),
  );
  await sleep(WARMUP_MS);
  const before = [...counts];
  const start = performance.now();
  await sleep(WINDOW_MS);
  const seconds = (performance.now() - start) / 1000;
  const fps = counts.map((n, i) => (n - before[i]!) / seconds);
  await Promise.all(sockets.map((s) => new Promise((resolve) => {
    s.once('close', resolve);
    s.close();
  })));
  return fps;
}

export const liveScreen: Benchmark = {
  name: 'live-screen',
  title: 'live screen over a WebSocket vs the phone\'s own screencap rate, simulated phone on a private adb server',
  async run() {
    const lab = await startAndroidLab('benchtop-bench-screen-', PHONE);
    const { id: sessionId } = await call<{ id: string }>('POST', `${lab.engine.api}/sessions`, { bearer: lab.apiKey });
    await allocateUntilInUse(lab, sessionId, REQUEST_TIMEOUT_MS);
    const base = lab.engine.api.replace(/^http/, 'ws');
    const url = `${base}/sessions/${sessionId}/devices/${encodeURIComponent(lab.serial)}/screen?token=${lab.apiKey}`;

    const direct = await directFps(lab.adb.port, lab.serial);
    detail(`direct sequential screencaps (engine driver, in-process): ${fmtFps(direct)}`);
    const [one] = await viewerFps(url, 1);
    detail(`one WebSocket viewer: ${fmtFps(one!)}`);
    const two = await viewerFps(url, 2);
    detail(`two WebSocket viewers: ${two.map(fmtFps).join(' and ')}`);
    const slower = Math.min(...two);

    const baseline = `${fmtFps(direct)} (sequential screencaps, same phone, same adb)`;
    const figure = (name: string, fps: number): Figure => ({
      benchmark: this.name,
      figure: name,
      value: fmtFps(fps),
      baseline,
      ratio: fmtRatio(fps, direct),
      target: `>= ${TARGET_RATIO.toFixed(2)}x`,
      met: fps / direct >= TARGET_RATIO,
    });
    return [figure('frames/s to one WebSocket viewer', one!), figure('frames/s to each of two viewers (slower one)', slower)];
  },
};
