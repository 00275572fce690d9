/**
 * npm run bench [-- name...]: runs the benchmarks (all, or the named ones) and prints each figure next to a
 * baseline measured in the same run. Benchmarks report; they do not fail on a missed target.
 * npm run bench -- --compare <ref> [--rounds N] name...: the same benchmarks on this checkout and on a git ref,
 * interleaved in one run, with each figure's ratio between the two (support/compare.ts).
 */
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


const ALL: Benchmark[] = [httpThroughput, sessionList, startup, allocation, screenshot, liveScreen, screenshotDuringFeed, assetUpload, loginThrottle, loginBurst, instanceReady, terminalEcho, terminalThroughput, sseDelivery, firstDelta, guiBundle, fleetScreen, guiLiveScreen, guiTapLatency, ios, wdaStart, wsRpc, mcp, reservations, releaseCleanup, remoteConnect, providers, appiumDirect, appium];

const args = process.argv.slice(2);
/** Takes `--flag value` out of args. */
const option = (flag: string): string | undefined => {
  const i = args.indexOf(flag);
  return i < 0 ? undefined : args.splice(i, 2)[1];
};
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
  try {
    figures.push(...(await bench.run()));
  } catch (error) {
    failed = true;
    if (aborted) break;
    console.error(`  ${bench.name} could not finish: ${(error as Error).stack ?? error}`);
  } finally {
    await cleanup();
  }
}

// An interrupted run exits from abort(), once its cleanup is done.
if (!aborted) {
  console.log(`\nSummary (${((performance.now() - started) / 1000).toFixed(0)} s, ${process.platform}, node ${process.version}):\n`);
  printTable(figures);
  process.exit(failed ? 1 : 0);
}
