/**
 * What the login throttle costs a correct login: the median latency of POST /auth/login with the right password,
 * on an engine that throttles (the default) against one started with BENCHTOP_LOGIN_THROTTLE=off, measured in the
 * same run, in alternating rounds. Target: within 5% (the password check dominates; the throttle is two map
 * lookups). Also shown: the throttle's own work per attempt, timed in this process, which no network noise hides.
 */
import { LoginThrottle } from '../src/main/engine/domain/login-throttle.js';
import { tempDir } from './support/cleanup.js';
import { detail, fmtMs, fmtRatio, median, type Benchmark } from './support/report.js';
import { OWNER, startEngine, type Server } from './support/servers.js';

const ROUNDS = 10;
const PER_ROUND = 10;
const TARGET_RATIO = 1.05;

async function timedLogin(api: string): Promise<number> {
  const start = performance.now();
  const res = await fetch(`${api}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(OWNER) });
  await res.text();
  const ms = performance.now() - start;
  if (res.status !== 200) throw new Error(`a correct login answered ${res.status}`);
  return ms;
}

/** Nanoseconds of throttle work per correct login: the check before it and the record after it. */
function throttleWorkNs(): number {
  const throttle = new LoginThrottle();
  // A throttle with history: many addresses and accounts already tracked.
  for (let i = 0; i < 5000; i++) throttle.failed({ account: `email:user${i}@lab.test`, address: `10.0.${i >> 8}.${i & 255}` }, 0);
  const attempt = { account: 'email:owner@bench.local', address: '127.0.0.1' };
  const n = 200_000;
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    throttle.waitMs(attempt, i);
    throttle.succeeded(attempt);
  }
  return Number(process.hrtime.bigint() - start) / n;
}

export const loginThrottle: Benchmark = {
  name: 'login-throttle',
  title: `POST /api/v1/auth/login with the right password, throttle on vs BENCHTOP_LOGIN_THROTTLE=off (median of ${ROUNDS * PER_ROUND})`,
  async run() {
    const on: Server = await startEngine(tempDir('benchtop-bench-throttle-on-'));
    const off: Server = await startEngine(tempDir('benchtop-bench-throttle-off-'), { BENCHTOP_LOGIN_THROTTLE: 'off' });
    // Warm both: the first login compiles its route's schemas.
    await timedLogin(on.api);
    await timedLogin(off.api);
    const withThrottle: number[] = [];
    const without: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < PER_ROUND; i++) withThrottle.push(await timedLogin(on.api));
      for (let i = 0; i < PER_ROUND; i++) without.push(await timedLogin(off.api));
    }
    await on.child.stop();
    await off.child.stop();
    const ns = throttleWorkNs();
    detail(`throttle work per correct login, in process: ${ns.toFixed(0)} ns`);
    const a = median(withThrottle);
    const b = median(without);
    return [{
      benchmark: this.name,
      figure: 'correct login, median latency',
      value: `${fmtMs(a)} throttled`,
      baseline: `${fmtMs(b)} unthrottled`,
      ratio: fmtRatio(a, b),
      target: `<= ${TARGET_RATIO.toFixed(2)}x`,
      met: a / b <= TARGET_RATIO,
    }];
  },
};
