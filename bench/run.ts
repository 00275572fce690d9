/**
 * npm run bench [-- name...]: runs the benchmarks (all, or the named ones) and prints each figure next to a
 * baseline measured in the same run. Benchmarks report; they do not fail on a missed target.
 * npm run bench -- --compare <ref> [--rounds N] name...: the same benchmarks on this checkout and on a git ref,
 * interleaved in one run, with each figure's ratio between the two (support/compare.ts).
 * npm run bench -- --smoke [name...]: each benchmark once at its smallest size (support/smoke.ts), as CI runs it: a
 * benchmark that cannot finish, or whose baseline no longer does the same work, fails the run.
 */
import { readdirSync } from 'node:fs';
import { allocation } from './allocation.js';
import { appiumDirect } from './appium-direct.js';
import { appium } from './appium.js';
import { reservations } from './reservations.js';
import { releaseCleanup } from './release-cleanup.js';
import { assetUpload } from './asset-upload.js';
import { firstDelta, sseDelivery } from './chat-events.js';
import { httpThroughput } from './http-throughput.js';
import { instanceReady } from './instance-ready.js';
import { ios } from './ios.js';
import { wdaStart } from './wda-start.js';
import { iosTunnel } from './ios-tunnel.js';
import { liveScreen, screenshotDuringFeed } from './live-screen.js';
import { loginBurst, loginThrottle } from './login-throttle.js';
import { mcp } from './mcp.js';
import { remoteConnect } from './remote-connect.js';
import { providers } from './providers.js';
import { screenshot } from './screenshot.js';
import { sessionList } from './session-list.js';
import { startup } from './startup.js';
import { terminalEcho, terminalThroughput } from './terminal.js';
import { wsRpc } from './ws.js';
import { fleetScreen, guiBundle, guiLiveScreen } from './gui.js';
import { guiTapLatency } from './gui-tap-latency.js';
import { cleanup } from './support/cleanup.js';
import { compare } from './support/compare.js';
import { printTable, type Benchmark, type Figure } from './support/report.js';
import { SMOKE, smokeInParallel } from './support/smoke.js';


const ALL: Benchmark[] = [httpThroughput, sessionList, startup, allocation, screenshot, liveScreen, screenshotDuringFeed, assetUpload, loginThrottle, loginBurst, instanceReady, terminalEcho, terminalThroughput, sseDelivery, firstDelta, guiBundle, fleetScreen, guiLiveScreen, guiTapLatency, ios, wdaStart, iosTunnel, wsRpc, mcp, reservations, releaseCleanup, remoteConnect, providers, appiumDirect, appium];

const args = process.argv.slice(2);
/** Takes `--flag value` out of args. */
const option = (flag: string): string | undefined => {
  const i = args.indexOf(flag);
  return i < 0 ? undefined : args.splice(i, 2)[1];
};
if (SMOKE) args.splice(args.indexOf('--smoke'), 1);
const compareWith = option('--compare');
const rounds = Number(option('--rounds') ?? 2);
const wanted = args;
const unknown = wanted.filter((name) => !ALL.some((b) => b.name === name));
if (unknown.length > 0) {
  console.error(`Unknown benchmark: ${unknown.join(', ')}. Available: ${ALL.map((b) => b.name).join(', ')}.`);
  process.exit(2);
}

if (compareWith !== undefined) {
  if (wanted.length === 0 || !(rounds >= 1)) {
    console.error('Usage: npm run bench -- --compare <git ref> [--rounds N] <benchmark>...');
    process.exit(2);
  }
  await compare(compareWith, wanted, rounds);
  process.exit(0);
}

// A benchmark someone adds to bench/ but not to ALL would never run, in CI or anywhere.
if (SMOKE) {
  const files = readdirSync(new URL('.', import.meta.url)).filter((f) => f.endsWith('.ts') && f !== 'run.ts');
  for (const file of files) {
    const exported = Object.values(await import(`./${file.replace(/\.ts$/, '.js')}`) as Record<string, unknown>)
      .filter((value): value is Benchmark => typeof value === 'object' && value !== null && 'name' in value && typeof (value as Benchmark).run === 'function');
    const missing = exported.filter((b) => !ALL.includes(b));
    if (missing.length > 0) {
      console.error(`bench/${file} exports ${missing.map((b) => b.name).join(', ')}, which bench/run.ts does not run: add it to ALL.`);
      process.exit(2);
    }
  }
}

// BENCH_SMOKE_JOBS=N runs a smoke run's benchmarks N at a time, each in a process of its own (smokeInParallel): on a
// machine with cores to spare. On CI's two cores they are CPU-bound (three at a time took 252 s, one after the other
// 166 s), so by default they run one after the other, in this process.
if (SMOKE && !process.env.BENCH_SMOKE_CHILD && Number(process.env.BENCH_SMOKE_JOBS) > 1) {
  const chosen = ALL.filter((b) => wanted.length === 0 || wanted.includes(b.name)).map((b) => b.name);
  process.exit(await smokeInParallel(chosen));
}

// Whatever ends the run early, the servers it started are stopped and its temp dirs removed.
let aborted = false;
const abort = (why: string, code: number) => {
  aborted = true;
  console.error(`\n${why}: stopping what the benchmarks started.`);
  void cleanup().finally(() => process.exit(code));
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => abort(signal, 130));
process.once('uncaughtException', (error) => abort(`uncaught ${error.stack ?? error}`, 1));
process.once('unhandledRejection', (error) => abort(`unhandled ${(error as Error)?.stack ?? error}`, 1));

const figures: Figure[] = [];
let failed = false;
const started = performance.now();
for (const bench of ALL.filter((b) => wanted.length === 0 || wanted.includes(b.name))) {
  if (aborted) break;
  console.log(`\n${bench.name}: ${bench.title}`);
  const begun = performance.now();
  try {
    const own = await bench.run();
    // A baseline that measured nothing (no samples, a zero) gives no ratio: the figure beside it compares nothing.
    const blind = own.filter((f) => /NaN|Infinity/.test(f.ratio));
    if (own.length === 0 || blind.length > 0) throw new Error(`no comparable figure: ${own.length === 0 ? 'none reported' : blind.map((f) => `${f.figure}: ${f.ratio}`).join('; ')}`);
    figures.push(...own);
  } catch (error) {
    failed = true;
    if (aborted) break;
    console.error(`  ${bench.name} could not finish: ${(error as Error).stack ?? error}`);
  } finally {
    await cleanup();
    if (SMOKE) console.log(`  ${bench.name}: ${((performance.now() - begun) / 1000).toFixed(1)} s`);
  }
}

// An interrupted run exits from abort(), once its cleanup is done.
if (!aborted) {
  console.log(`\n${SMOKE ? 'Smoke run, one round at the smallest size: these figures measure nothing' : 'Summary'} (${((performance.now() - started) / 1000).toFixed(0)} s, ${process.platform}, node ${process.version}):\n`);
  printTable(figures);
  process.exit(failed ? 1 : 0);
}
