/**
 * Two figures of the assistant's event path, each next to a baseline measured in the same run:
 *
 * - SSE delivery latency, from the moment the engine appends an event (persist, then fan out) to the moment a client
 *   has parsed it, with 100 clients following one execution. Baseline: a bare node:http server writing the same frames
 *   to 100 clients at the same pace, with no database and no framework.
 * - Time to the first delta: POST .../messages?stream=true until the first assistant.message.delta, against the
 *   scripted model's own time to its first text chunk, asked directly. The difference is what the engine adds.
 *
 * The engine runs in this process, so that the append time and the receipt time are read from one clock; the
 * scripted model and the clients share the process with it, which only makes the figures pessimistic.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../src/main/engine/config.js';
import { createEngine } from '../src/main/engine/engine.js';
import { frame } from '../src/main/engine/events/sse.js';
import { readEvents, startScriptedModel, type ScriptedModel } from '../test/support/scripted-model.js';
import { onCleanup, tempDir } from './support/cleanup.js';
import { detail, fmtMs, fmtRatio, median, percentile, type Benchmark } from './support/report.js';
import { OWNER, REQUEST_TIMEOUT_MS } from './support/servers.js';
import { sized } from './support/smoke.js';

const SUBSCRIBERS = sized(100, 2);
const DELTAS = sized(100, 2);
const DELTA_INTERVAL_MS = 20;
/** Time for every subscriber to attach before the first delta. */
const ATTACH_MS = sized(1500, 300);
const FIRST_DELTA_WARMUP = sized(5, 0);
const FIRST_DELTA_SAMPLES = sized(40, 1);
const TARGET_P99_MS = 50;
const TARGET_ADDED_MS = 20;

/** An engine in this process with a chat whose model is the scripted one. */
async function startChatEngine(prefix: string, model: ScriptedModel) {
  const dataDir = tempDir(prefix);
  const engine = createEngine({
    ...loadConfig({}),
    port: 0,
    dataDir,
    adb: null,
    logLevel: 'silent',
    ownerEmail: OWNER.email,
    ownerPassword: OWNER.password,
  });
  const { url } = await engine.start();
  onCleanup(() => engine.stop());
  const api = `${url}/api/v1`;
  const post = async (path: string, body: unknown, token: string, method = 'POST') => {
    const res = await fetch(api + path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const json = await res.json();
    if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(json)}`);
    return json;
  };
  const { token } = await post('/auth/login', OWNER, '');
  await post('/lab/assistant', { provider: 'openai', endpoint: model.endpoint, model: 'scripted' }, token, 'PUT');
  const session = (await post('/sessions', {}, token)).id;
  const chat = (await post(`/sessions/${session}/chats`, {}, token)).id;
  return { engine, api, token, chatPath: `/sessions/${session}/chats/${chat}`, post };
}

/** Latencies of every delta at every client, each from its send (or append) time to its receipt. */
async function follow(urls: string[], headers: Record<string, string>, sentAt: (seq: number) => number | undefined): Promise<number[]> {
  const latencies: number[] = [];
  await Promise.all(
    urls.map(async (url) => {
      const res = await fetch(url, { headers });
      await readEvents(res, (event) => {
        const received = performance.now();
        const sent = event.event === 'assistant.message.delta' ? sentAt(event.id) : undefined;
        if (sent !== undefined) latencies.push(received - sent);
        return false;
      });
    }),
  );
  return latencies;
}

export const sseDelivery: Benchmark = {
  name: 'sse-delivery',
  title: `SSE delivery latency, event append to client receipt, ${SUBSCRIBERS} subscribers x ${DELTAS} deltas, vs a bare node:http SSE server`,
  async run() {
    const text = Array.from({ length: DELTAS }, (_, i) => `token ${i} `);
    const model = await startScriptedModel('openai', () => ({ text, chunkDelayMs: DELTA_INTERVAL_MS, stallMs: ATTACH_MS }));
    onCleanup(() => model.stop());
    const { engine, api, token, chatPath, post } = await startChatEngine('benchtop-bench-sse-', model);

    // When each event's append began: persisting and fanning out are part of the latency.
    const appendedAt = new Map<number, number>();
    const events = engine.services.chats.events;
    const append = events.append.bind(events);
    events.append = (executionId, kind, data) => {
      const start = performance.now();
      const event = append(executionId, kind, data);
      appendedAt.set(event.seq, start);
      return event;
    };
    const message = await post(`${chatPath}/messages`, { text: 'go' }, token);
    const url = `${api}${chatPath}/messages/${message.id}/events`;
    const engineLatencies = await follow(Array(SUBSCRIBERS).fill(url), { authorization: `Bearer ${token}` }, (seq) => appendedAt.get(seq));
    if (engineLatencies.length !== SUBSCRIBERS * DELTAS) throw new Error(`expected ${SUBSCRIBERS * DELTAS} deltas, got ${engineLatencies.length}`);

    // The baseline: the same frames at the same pace from a bare server.
    const sentAt = new Map<number, number>();
    const clients: ServerResponse[] = [];
    const bare = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      clients.push(res);
    });
    await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
    onCleanup(() => new Promise<void>((resolve) => bare.close(() => resolve())));
    const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}/`;
    const following = follow(Array(SUBSCRIBERS).fill(bareUrl), {}, (seq) => sentAt.get(seq));
    while (clients.length < SUBSCRIBERS) await new Promise((r) => setTimeout(r, 10));
    for (let seq = 1; seq <= DELTAS; seq++) {
      await new Promise((r) => setTimeout(r, DELTA_INTERVAL_MS));
      sentAt.set(seq, performance.now());
      const data = frame({ seq, kind: 'assistant.message.delta', data: JSON.stringify({ messageId: message.id, text: text[seq - 1] }) });
      for (const c of clients) c.write(data);
    }
    for (const c of clients) c.end();
    const bareLatencies = await following;
    if (bareLatencies.length !== engineLatencies.length) throw new Error(`the bare server delivered ${bareLatencies.length} deltas, the engine ${engineLatencies.length}`);

    const [p50, p99, b50, b99] = [percentile(engineLatencies, 50), percentile(engineLatencies, 99), percentile(bareLatencies, 50), percentile(bareLatencies, 99)];
    detail(`engine: p50 ${fmtMs(p50)}, p99 ${fmtMs(p99)}, max ${fmtMs(Math.max(...engineLatencies))} over ${engineLatencies.length} deliveries`);
    detail(`bare node:http: p50 ${fmtMs(b50)}, p99 ${fmtMs(b99)}`);
    return [
      { benchmark: this.name, figure: `append to receipt p50, ${SUBSCRIBERS} subscribers`, value: fmtMs(p50), baseline: `bare SSE p50 ${fmtMs(b50)}`, ratio: fmtRatio(p50, b50), target: 'report', met: true },
      { benchmark: this.name, figure: `append to receipt p99, ${SUBSCRIBERS} subscribers`, value: fmtMs(p99), baseline: `bare SSE p99 ${fmtMs(b99)}`, ratio: fmtRatio(p99, b99), target: `p99 <= ${TARGET_P99_MS} ms`, met: p99 <= TARGET_P99_MS },
    ];
  },
};

export const firstDelta: Benchmark = {
  name: 'first-delta',
  title: `time to the first delta through POST ...?stream=true vs the scripted model's own, ${FIRST_DELTA_SAMPLES} each, interleaved`,
  async run() {
    const model = await startScriptedModel('openai', () => ({ text: ['Hello', ' there'] }));
    onCleanup(() => model.stop());
    const { api, token, chatPath } = await startChatEngine('benchtop-bench-first-delta-', model);

    const direct = async (): Promise<number> => {
      const start = performance.now();
      const res = await fetch(`${model.endpoint}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'scripted', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      let first = 0;
      await readEventsRaw(res, (data) => {
        if (!first && /"content":"[^"]/.test(data)) first = performance.now() - start;
      });
      return first;
    };
    const throughEngine = async (): Promise<number> => {
      const start = performance.now();
      const res = await fetch(`${api}${chatPath}/messages?stream=true`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'hi' }),
      });
      let first = 0;
      await readEvents(res, (event) => {
        if (!first && event.event === 'assistant.message.delta') first = performance.now() - start;
        return false;
      });
      return first;
    };

    const viaEngine: number[] = [];
    const viaModel: number[] = [];
    for (let i = 0; i < FIRST_DELTA_WARMUP + FIRST_DELTA_SAMPLES; i++) {
      const a = await throughEngine();
      const b = await direct();
      if (!a || !b) throw new Error(`no delta ${a ? 'from the model directly' : 'through the engine'}`);
      if (i < FIRST_DELTA_WARMUP) continue;
      viaEngine.push(a);
      viaModel.push(b);
    }
    const [e50, m50] = [median(viaEngine), median(viaModel)];
    const added = e50 - m50;
    detail(`through the engine: median ${fmtMs(e50)}, p95 ${fmtMs(percentile(viaEngine, 95))}`);
    detail(`the model directly: median ${fmtMs(m50)}, p95 ${fmtMs(percentile(viaModel, 95))}`);
    detail(`added by the engine (auth, two message rows, the provider request, the first events persisted): ${fmtMs(added)}`);
    return [{
      benchmark: this.name,
      figure: 'time to first delta, median',
      value: `${fmtMs(e50)} (adds ${fmtMs(added)})`,
      baseline: `the model directly ${fmtMs(m50)}`,
      ratio: fmtRatio(e50, m50),
      target: `adds <= ${TARGET_ADDED_MS} ms`,
      met: added <= TARGET_ADDED_MS,
    }];
  },
};

/** Reads a raw event stream's data lines (the model's own format) until it ends. */
async function readEventsRaw(res: Response, onData: (data: string) => void): Promise<void> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    for (const line of value.split('\n')) if (line.startsWith('data: ')) onData(line.slice(6));
  }
}
