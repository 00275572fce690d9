/**
 * Target: GET /api/v1/sessions/{id} with API-key auth at 50 connections reaches at least 50% of the requests/second
 * of a bare Fastify handler. Each server runs alone in its own process; autocannon runs here, in the parent.
 */
import autocannon from 'autocannon';
import { tempDir } from './support/cleanup.js';
import { detail, fmtMs, fmtRatio, fmtRps, type Benchmark } from './support/report.js';
import { call, ownerApiKey, startBareFastify, startEngine } from './support/servers.js';
import { sized } from './support/smoke.js';

const CONNECTIONS = sized(50, 1);
const WARMUP_SECONDS = sized(1, 0);
const SECONDS = sized(5, 1);
const TARGET_RATIO = 0.5;

interface Load {
  rps: number;
  p50: number;
  p99: number;
}

async function load(url: string, headers: Record<string, string> = {}): Promise<Load> {
  if (WARMUP_SECONDS > 0) await autocannon({ url, headers, connections: CONNECTIONS, duration: WARMUP_SECONDS });
  const r = await autocannon({ url, headers, connections: CONNECTIONS, duration: SECONDS });
  if (r.non2xx + r.errors > 0) {
    throw new Error(`${url}: ${r.non2xx} non-2xx replies and ${r.errors} errors in ${r.requests.total} requests`);
  }
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 };
}

const describe = (l: Load) => `${fmtRps(l.rps)}, p50 ${fmtMs(l.p50)}, p99 ${fmtMs(l.p99)}`;

export const httpThroughput: Benchmark = {
  name: 'http-throughput',
  title: `GET /api/v1/sessions/{id}, API key, ${CONNECTIONS} connections, ${SECONDS} s after a ${WARMUP_SECONDS} s warm-up`,
  async run() {
    const bare = await startBareFastify();
    const sessionPath = '/sessions/6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b';
    const baseline = await load(bare.api + sessionPath);
    await bare.child.stop();
    detail(`bare Fastify handler: ${describe(baseline)}`);

    const engine = await startEngine(tempDir('benchtop-bench-http-'));
    const apiKey = await ownerApiKey(engine.api);
    const session = await call<{ id: string }>('POST', `${engine.api}/sessions`, { bearer: apiKey });
    const measured = await load(`${engine.api}/sessions/${session.id}`, { authorization: `Bearer ${apiKey}` });
    await engine.child.stop();
    detail(`engine:               ${describe(measured)}`);

    const ratio = measured.rps / baseline.rps;
    return [{
      benchmark: this.name,
      figure: `GET /sessions/{id}, API key, ${CONNECTIONS} conns`,
      value: `${fmtRps(measured.rps)} (p99 ${fmtMs(measured.p99)})`,
      baseline: `bare Fastify ${fmtRps(baseline.rps)} (p99 ${fmtMs(baseline.p99)})`,
      ratio: fmtRatio(measured.rps, baseline.rps),
      target: `>= ${TARGET_RATIO.toFixed(2)}x of bare`,
      met: ratio >= TARGET_RATIO,
    }];
  },
};
