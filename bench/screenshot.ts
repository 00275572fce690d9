/**
 * Target: GET /sessions/{id}/devices/{serial}/screenshot takes at most 1.2x a direct `adb exec-out screencap -p` of
 * the same phone, measured in the same run. The requests run one at a time and interleaved (API, adb, API, adb, ...),
 * so that anything that drifts during the run, such as the phone re-rendering its status bar clock once a minute,
 * falls on both sides alike.
 *
 * The adb command line starts a process per screenshot, so it is also shown against the engine's own driver
 * (adbkit, no HTTP) for the cost of the API layer alone.
 */
import { AndroidFleet } from '../src/main/engine/fleet/android/android-fleet.js';
import { allocateUntilInUse, startAndroidLab } from './support/android-lab.js';
import { detail, fmtMs, fmtRatio, median, percentile, type Benchmark } from './support/report.js';
import { call, REQUEST_TIMEOUT_MS } from './support/servers.js';
import { BENCH_SCREEN, sized } from './support/smoke.js';

const WARMUP = sized(5, 0);
const SAMPLES = sized(30, 1);
/** No loop runs longer than this, whatever its count. */
const LOOP_BUDGET_MS = 60_000;
const TARGET_RATIO = 1.2;
/** A Pixel 7-sized display, so the PNG is as large as a real phone's home screen. */
const PHONE = { model: 'Bench Pixel', ...BENCH_SCREEN };
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Width x height from the IHDR chunk, after checking the signature: proof that a reply is a whole PNG header. */
function pngSize(png: Buffer, source: string): string {
  if (png.length < 24 || !png.subarray(0, 8).equals(PNG_SIGNATURE)) throw new Error(`${source} returned no PNG (${png.length} bytes)`);
  return `${png.readUInt32BE(16)}x${png.readUInt32BE(20)}`;
}

const summary = (xs: number[]) => `median ${fmtMs(median(xs))}, p95 ${fmtMs(percentile(xs, 95))}`;

export const screenshot: Benchmark = {
  name: 'screenshot',
  title: `GET .../screenshot vs \`adb exec-out screencap -p\` of the same phone, ${SAMPLES} each, interleaved, after ${WARMUP} warm-up`,
  async run() {
    const lab = await startAndroidLab('benchtop-bench-screenshot-', PHONE);
    const { id: sessionId } = await call<{ id: string }>('POST', `${lab.engine.api}/sessions`, { bearer: lab.apiKey });
    await allocateUntilInUse(lab, sessionId, REQUEST_TIMEOUT_MS);
    const url = `${lab.engine.api}/sessions/${sessionId}/devices/${encodeURIComponent(lab.serial)}/screenshot`;
    const driver = new AndroidFleet({ host: '127.0.0.1', port: lab.adb.port }, () => undefined).driver(lab.serial);

    const viaApi = async (): Promise<Buffer> => {
      const res = await fetch(url, { headers: { authorization: `Bearer ${lab.apiKey}` }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      const body = Buffer.from(await res.arrayBuffer());
      if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}: ${body.toString('utf8', 0, 500)}`);
      if (res.headers.get('content-type') !== 'image/png') throw new Error(`GET ${url} answered ${res.headers.get('content-type')}`);
      return body;
    };
    const viaAdb = async (): Promise<Buffer> => {
      const result = await lab.adb.run(['-s', lab.serial, 'exec-out', 'screencap -p'], { timeoutMs: REQUEST_TIMEOUT_MS });
      if (result.code !== 0) throw new Error(`adb exec-out screencap -p exited ${result.code}: ${result.stderr}`);
      return result.stdout;
    };
    const viaDriver = () => driver.screenshot();
    const time = async (take: () => Promise<Buffer>, source: string): Promise<{ ms: number; size: string; bytes: number }> => {
      const start = performance.now();
      const png = await take();
      const ms = performance.now() - start;
      return { ms, size: pngSize(png, source), bytes: png.length };
    };

    const api: number[] = [];
    const adb: number[] = [];
    const adbkit: number[] = [];
    const sizes = new Set<string>();
    const bytes: number[] = [];
    const deadline = performance.now() + LOOP_BUDGET_MS;
    for (let i = 0; i < WARMUP + SAMPLES && performance.now() < deadline; i++) {
      const a = await time(viaApi, 'the API');
      const b = await time(viaAdb, 'adb exec-out');
      const c = await time(viaDriver, 'adbkit');
      if (i < WARMUP) continue;
      api.push(a.ms);
      adb.push(b.ms);
      adbkit.push(c.ms);
      for (const shot of [a, b, c]) sizes.add(shot.size);
      bytes.push(a.bytes);
    }
    if (api.length < SAMPLES) throw new Error(`only ${api.length} of ${SAMPLES} samples ran within ${LOOP_BUDGET_MS / 1000} s`);
    if (sizes.size !== 1) throw new Error(`the screenshots disagree on the screen size: ${[...sizes].join(', ')}`);
    await lab.engine.child.stop();

    const [apiMedian, adbMedian, adbkitMedian] = [median(api), median(adb), median(adbkit)];
    detail(`screen ${[...sizes][0]}, PNG ${(median(bytes) / 1024).toFixed(0)} KB`);
    detail(`API, GET .../screenshot:            ${summary(api)}`);
    detail(`direct, adb exec-out screencap -p: ${summary(adb)}`);
    detail(`direct, the engine's driver (adbkit, no HTTP, no process start): ${summary(adbkit)}; API / adbkit ${fmtRatio(apiMedian, adbkitMedian)}`);
    return [{
      benchmark: this.name,
      figure: 'GET .../screenshot, sequential',
      value: `median ${fmtMs(apiMedian)} (p95 ${fmtMs(percentile(api, 95))})`,
      baseline: `adb exec-out screencap -p median ${fmtMs(adbMedian)} (p95 ${fmtMs(percentile(adb, 95))})`,
      ratio: fmtRatio(apiMedian, adbMedian),
      target: `<= ${TARGET_RATIO.toFixed(2)}x of adb`,
      met: apiMedian / adbMedian <= TARGET_RATIO,
    }];
  },
};
