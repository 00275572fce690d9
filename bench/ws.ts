/**
 * Target: over /ws (the Mobile Next fleet's JSON-RPC), a device.io.tap round trip takes at most 1.2x the same tap over
 * REST (POST .../actions), and a device.screenshot at most 1.2x GET .../screenshot, measured in the same run against
 * the same phone. One socket stays open for the whole run, as mobilewright's driver keeps one; REST reuses its
 * keep-alive connection. The calls run one at a time and interleaved (REST, /ws, REST, /ws, ...), so that whatever
 * drifts during the run falls on both sides alike.
 */
import { WebSocket } from 'ws';
import { allocateUntilInUse, startAndroidLab } from './support/android-lab.js';
import { detail, fmtMs, fmtRatio, median, percentile, type Benchmark, type Figure } from './support/report.js';
import { call, REQUEST_TIMEOUT_MS } from './support/servers.js';
import { BENCH_SCREEN, sized } from './support/smoke.js';

const WARMUP = sized(10, 0);
const SAMPLES = sized(100, 1);
const SCREENSHOT_SAMPLES = sized(30, 1);
/** No loop runs longer than this, whatever its count. */
const LOOP_BUDGET_MS = 60_000;
const TARGET_RATIO = 1.2;
const PHONE = { model: 'Bench Pixel', ...BENCH_SCREEN };

/** A JSON-RPC client on one socket, like the driver's RpcClient. */
async function rpcClient(url: string, apiKey: string) {
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${apiKey}` } });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  type Reply = { result?: Record<string, unknown>; error?: { code: number; message: string } };
  const pending = new Map<number, (reply: Reply) => void>();
  ws.on('message', (data) => {
    const reply = JSON.parse(data.toString()) as Reply & { id: number };
    pending.get(reply.id)?.(reply);
    pending.delete(reply.id);
  });
  let nextId = 1;
  return {
    async call(method: string, params: Record<string, unknown>): Promise<Record<string, unknown> | undefined> {
      const id = nextId++;
      const reply = await new Promise<Reply>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${method} timed out`)), REQUEST_TIMEOUT_MS);
        pending.set(id, (r) => {
          clearTimeout(timer);
          resolve(r);
        });
        ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      });
      if (reply.error) throw new Error(`${method}: ${reply.error.code} ${reply.error.message}`);
      return reply.result;
    },
    close: () => ws.close(1000),
  };
}

const summary = (xs: number[]) => `median ${fmtMs(median(xs))}, p95 ${fmtMs(percentile(xs, 95))}`;

async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

export const wsRpc: Benchmark = {
  name: 'ws',
  title: `/ws device.io.tap and device.screenshot vs the same over REST, interleaved, ${SAMPLES} taps and ${SCREENSHOT_SAMPLES} screenshots each, after ${WARMUP} warm-up`,
  async run() {
    const lab = await startAndroidLab('benchtop-bench-ws-', PHONE);
    const { id: sessionId } = await call<{ id: string }>('POST', `${lab.engine.api}/sessions`, { bearer: lab.apiKey });
    await allocateUntilInUse(lab, sessionId, REQUEST_TIMEOUT_MS);
    const device = `${lab.engine.api}/sessions/${sessionId}/devices/${encodeURIComponent(lab.serial)}`;
    const rpc = await rpcClient(`${lab.engine.api.replace(/^http/, 'ws').replace(/\/api\/v1$/, '')}/ws`, lab.apiKey);
    const headers = { authorization: `Bearer ${lab.apiKey}` };

    const restTap = async (x: number) => {
      const res = await fetch(`${device}/actions`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'tap', x, y: 20 }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const body = await res.text();
      if (res.status !== 200) throw new Error(`POST .../actions answered ${res.status}: ${body}`);
    };
    const wsTap = (x: number) => rpc.call('device.io.tap', { deviceId: lab.serial, x, y: 20 });
    const restShot = async () => {
      const res = await fetch(`${device}/screenshot`, { headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      const png = Buffer.from(await res.arrayBuffer());
      if (res.status !== 200 || png.length < 1000) throw new Error(`GET .../screenshot answered ${res.status} (${png.length} bytes)`);
      return png.length;
    };
    const wsShot = async () => {
      const data = (await rpc.call('device.screenshot', { deviceId: lab.serial }))?.data;
      const png = Buffer.from(String(data).slice(String(data).indexOf(',') + 1), 'base64');
      if (png.length < 1000) throw new Error(`device.screenshot returned ${png.length} bytes`);
      return png.length;
    };

    const rest: number[] = [];
    const ws: number[] = [];
    let deadline = performance.now() + LOOP_BUDGET_MS;
    // Taps to the status bar's empty middle: nothing on the home screen opens, so every tap costs the same.
    for (let i = 0; i < WARMUP + SAMPLES && performance.now() < deadline; i++) {
      const a = await timed(() => restTap(500 + (i % 10)));
      const b = await timed(() => wsTap(500 + (i % 10)));
      if (i < WARMUP) continue;
      rest.push(a);
      ws.push(b);
    }
    if (rest.length < SAMPLES) throw new Error(`only ${rest.length} of ${SAMPLES} tap samples ran within ${LOOP_BUDGET_MS / 1000} s`);

    const restShots: number[] = [];
    const wsShots: number[] = [];
    const bytes: number[] = [];
    deadline = performance.now() + LOOP_BUDGET_MS;
    for (let i = 0; i < WARMUP + SCREENSHOT_SAMPLES && performance.now() < deadline; i++) {
      let size = 0;
      const a = await timed(async () => (size = await restShot()));
      const b = await timed(() => wsShot());
      if (i < WARMUP) continue;
      restShots.push(a);
      wsShots.push(b);
      bytes.push(size);
    }
    if (restShots.length < SCREENSHOT_SAMPLES) throw new Error(`only ${restShots.length} of ${SCREENSHOT_SAMPLES} screenshot samples ran within ${LOOP_BUDGET_MS / 1000} s`);
    rpc.close();
    await lab.engine.child.stop();

    detail(`tap, REST POST .../actions:   ${summary(rest)}`);
    detail(`tap, /ws device.io.tap:       ${summary(ws)}`);
    detail(`screenshot (PNG ${(median(bytes) / 1024).toFixed(0)} KB; /ws sends it base64 in JSON), REST: ${summary(restShots)}`);
    detail(`screenshot, /ws device.screenshot: ${summary(wsShots)}`);
    const figure = (name: string, value: number[], baseline: number[], baselineName: string): Figure => ({
      benchmark: this.name,
      figure: name,
      value: `median ${fmtMs(median(value))} (p95 ${fmtMs(percentile(value, 95))})`,
      baseline: `${baselineName} median ${fmtMs(median(baseline))} (p95 ${fmtMs(percentile(baseline, 95))})`,
      ratio: fmtRatio(median(value), median(baseline)),
      target: `<= ${TARGET_RATIO.toFixed(2)}x of REST`,
      met: median(value) / median(baseline) <= TARGET_RATIO,
    });
    return [
      figure('/ws device.io.tap round trip', ws, rest, 'REST POST .../actions tap'),
      figure('/ws device.screenshot', wsShots, restShots, 'REST GET .../screenshot'),
    ];
  },
};
