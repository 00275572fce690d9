/**
 * Target: a tool call over /mcp (the SDK's client, Streamable HTTP) takes at most 1.3x the same REST call, measured
 * in the same run against the same phone: mobile_take_screenshot vs GET .../screenshot, and
 * mobile_click_on_screen_at_coordinates vs POST .../actions {"type":"tap"}. Calls run one at a time and interleaved
 * (MCP, REST, MCP, REST, ...), so that drift falls on both sides alike. Each MCP call includes what the client does
 * to read its answer: JSON, and (for the screenshot) base64 back to the PNG.
 *
 * The simulated phone captures its screen and taps in about a millisecond; a real one takes 300 ms or more to capture
 * and starts a Java process for every `input tap`. Both targets are judged as an agent meets them, with a real phone's
 * published cost under both calls (support/real-phone.ts), and the simulated figures, the fixed cost of MCP on a call
 * that costs next to nothing, are printed beside them.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startAndroidLab } from './support/android-lab.js';
import { detail, fmtMs, fmtRatio, median, percentile, type Benchmark, type Figure } from './support/report.js';
import { REQUEST_TIMEOUT_MS } from './support/servers.js';
import { REAL_INPUT_TAP_MS, REAL_INPUT_TAP_SOURCE, REAL_SCREENCAP_MS, REAL_SCREENCAP_SOURCE } from './support/real-phone.js';
import { sized } from './support/smoke.js';

const WARMUP = sized(5, 0);
const SAMPLES = sized(60, 1);
const LOOP_BUDGET_MS = 90_000;
const TARGET_RATIO = 1.3;
/** A Pixel 7-sized display, so the PNG is as large as a real phone's home screen. */
const PHONE = { model: 'Bench Pixel', width: 1080, height: 2400, density: 420 };

const summary = (xs: number[]) => `median ${fmtMs(median(xs))}, p95 ${fmtMs(percentile(xs, 95))}`;

interface ToolResult {
  content: { type: string; text?: string; data?: string }[];
  isError?: boolean;
}

export const mcp: Benchmark = {
  name: 'mcp',
  title: `/mcp tool calls (SDK client, Streamable HTTP) vs the same REST calls on one phone, ${SAMPLES} each, interleaved, after ${WARMUP} warm-up`,
  async run() {
    const lab = await startAndroidLab('benchtop-bench-mcp-', PHONE);
    const origin = lab.engine.api.replace(/\/api\/v1$/, '');
    const transport = new StreamableHTTPClientTransport(new URL(`${origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${lab.apiKey}` } } });
    const client = new Client({ name: 'benchtop-bench', version: '1.0.0' });
    await client.connect(transport);
    try {
      const tool = async (name: string, args: Record<string, unknown>): Promise<ToolResult> => {
        const result = (await client.callTool({ name, arguments: args }, undefined, { timeout: REQUEST_TIMEOUT_MS })) as ToolResult;
        if (result.isError) throw new Error(`${name} failed: ${result.content[0]?.text}`);
        return result;
      };
      const allocated = JSON.parse((await tool('mobile_allocate_remote_device', { platform: 'android' })).content[0]!.text!) as { device: string; sessionId: string };
      if (allocated.device !== lab.serial) throw new Error(`allocated ${allocated.device}, not ${lab.serial}`);
      const base = `${lab.engine.api}/sessions/${allocated.sessionId}/devices/${encodeURIComponent(lab.serial)}`;
      const headers = { authorization: `Bearer ${lab.apiKey}` };

      const mcpScreenshot = async () => {
        const [block] = (await tool('mobile_take_screenshot', { device: lab.serial })).content;
        if (block?.type !== 'image') throw new Error(`mobile_take_screenshot answered a ${block?.type} block`);
        return Buffer.from(block.data!, 'base64').length;
      };
      const restScreenshot = async () => {
        const res = await fetch(`${base}/screenshot`, { headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
        const body = Buffer.from(await res.arrayBuffer());
        if (res.status !== 200) throw new Error(`GET .../screenshot answered ${res.status}`);
        return body.length;
      };
      const mcpClick = async () => {
        await tool('mobile_click_on_screen_at_coordinates', { device: lab.serial, x: 540, y: 2300 });
        return 0;
      };
      const restClick = async () => {
        const res = await fetch(`${base}/actions`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'tap', x: 540, y: 2300 }),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`POST .../actions answered ${res.status}`);
        return 0;
      };

      const measure = async (viaMcp: () => Promise<number>, viaRest: () => Promise<number>) => {
        const out = { mcp: [] as number[], rest: [] as number[], bytes: [] as number[] };
        const deadline = performance.now() + LOOP_BUDGET_MS;
        for (let i = 0; i < WARMUP + SAMPLES && performance.now() < deadline; i++) {
          let start = performance.now();
          const mcpBytes = await viaMcp();
          const m = performance.now() - start;
          start = performance.now();
          const restBytes = await viaRest();
          const r = performance.now() - start;
          if (mcpBytes !== restBytes) throw new Error(`MCP returned ${mcpBytes} bytes, REST ${restBytes}`);
          if (i < WARMUP) continue;
          out.mcp.push(m);
          out.rest.push(r);
          out.bytes.push(mcpBytes);
        }
        if (out.mcp.length < SAMPLES) throw new Error(`only ${out.mcp.length} of ${SAMPLES} samples ran within ${LOOP_BUDGET_MS / 1000} s`);
        return out;
      };

      // The same tool call as one bare JSON-RPC POST (fetch, JSON.parse, base64 back to the PNG), without the SDK
      // client: what MCP adds on the engine's side, apart from what the SDK client adds on the agent's.
      let rpcId = 1_000_000;
      const bareScreenshot = async () => {
        const res = await fetch(`${origin}/mcp`, {
          method: 'POST',
          headers: {
            ...headers,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-session-id': transport.sessionId!,
            'mcp-protocol-version': transport.protocolVersion!,
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: rpcId++, method: 'tools/call', params: { name: 'mobile_take_screenshot', arguments: { device: lab.serial } } }),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const answer = (await res.json()) as { result?: ToolResult };
        const block = answer.result?.content[0];
        if (block?.type !== 'image') throw new Error(`the bare tools/call answered ${JSON.stringify(answer).slice(0, 200)}`);
        return Buffer.from(block.data!, 'base64').length;
      };

      const shots = await measure(mcpScreenshot, restScreenshot);
      const bare = await measure(bareScreenshot, restScreenshot);
      // Taps at the bottom edge of the home screen land on nothing, so the screen does not change between samples.
      const clicks = await measure(mcpClick, restClick);

      const figures: Figure[] = [];
      const report = (figure: string, baseline: string, m: number[], r: number[], judged = true) => {
        detail(`${figure}: ${summary(m)}`);
        detail(`${baseline}: ${summary(r)}`);
        figures.push({
          benchmark: 'mcp',
          figure,
          value: `median ${fmtMs(median(m))} (p95 ${fmtMs(percentile(m, 95))})`,
          baseline: `${baseline} median ${fmtMs(median(r))} (p95 ${fmtMs(percentile(r, 95))})`,
          ratio: fmtRatio(median(m), median(r)),
          target: judged ? `<= ${TARGET_RATIO.toFixed(2)}x of REST` : 'reported',
          met: !judged || median(m) / median(r) <= TARGET_RATIO,
        });
      };
      detail(`screen ${PHONE.width}x${PHONE.height}, PNG ${(median(shots.bytes) / 1024).toFixed(0)} KB (base64 over MCP: ${(median(shots.bytes) * 4 / 3 / 1024).toFixed(0)} KB)`);
      // The same samples with a real phone's published capture added to every call, MCP and REST alike.
      const withRealCapture = (xs: number[]) => xs.map((x) => x + REAL_SCREENCAP_MS);
      report(`mobile_take_screenshot, a real phone's ${REAL_SCREENCAP_MS} ms capture under both`, 'GET .../screenshot, same', withRealCapture(shots.mcp), withRealCapture(shots.rest));
      report('mobile_take_screenshot, simulated phone (capture about 1 ms)', 'GET .../screenshot', shots.mcp, shots.rest, false);
      // Where the milliseconds MCP adds go: a bare POST's part (against REST, same run) and the SDK client's.
      const engineMs = median(bare.mcp) - median(bare.rest);
      const clientMs = median(shots.mcp) - median(shots.rest) - engineMs;
      detail(`mobile_take_screenshot as a bare JSON-RPC POST (no SDK client): ${summary(bare.mcp)}, against REST ${summary(bare.rest)}`);
      detail(`of the ${fmtMs(median(shots.mcp) - median(shots.rest))} MCP adds: ${fmtMs(engineMs)} in a bare JSON-RPC POST against the GET (its JSON body and answer, the engine's JSON-RPC handling), ${fmtMs(clientMs)} in the SDK client (its fetch wrapper, JSON-RPC and zod validation of the answer)`);
      const withRealTap = (xs: number[]) => xs.map((x) => x + REAL_INPUT_TAP_MS);
      report(`mobile_click_on_screen_at_coordinates, a real phone's ${REAL_INPUT_TAP_MS} ms input tap under both`, 'POST .../actions tap, same', withRealTap(clicks.mcp), withRealTap(clicks.rest));
      report('mobile_click_on_screen_at_coordinates, simulated phone (tap about 1 ms)', 'POST .../actions tap', clicks.mcp, clicks.rest, false);
      detail(`the real phone's capture: ${REAL_SCREENCAP_MS} ms, the low end of ${REAL_SCREENCAP_SOURCE}`);
      detail(`the real phone's tap: ${REAL_INPUT_TAP_MS} ms, ${REAL_INPUT_TAP_SOURCE}`);
      return figures;
    } finally {
      await client.close();
      await lab.engine.child.stop();
    }
  },
};
