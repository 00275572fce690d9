/**
 * npm run bench [-- name...]: runs the benchmarks (all, or the named ones) and prints each figure next to a
 * baseline measured in the same run. Benchmarks report; they do not fail on a missed target.
 * npm run bench -- --compare <ref> [--rounds N] name...: the same benchmarks on this checkout and on a git ref,
 * interleaved in one run, with each figure's ratio between the two (support/compare.ts).
 * npm run bench -- --smoke [name...]: each benchmark once at its smallest size (support/smoke.ts), as CI runs it: a
 * benchmark that cannot finish, or whose baseline no longer does the same work, fails the run. It runs on a bundle of
 * the benchmarks (support/bundle.ts), two at a time (BENCH_SMOKE_JOBS).
 */
import { readdirSync } from 'node:fs';
import { cleanup } from './support/cleanup.js';
import { compare } from './support/compare.js';
import { enginesLastLines } from './support/processes.js';
import { printTable, type Benchmark, type Figure } from './support/report.js';
import { cpuSeconds, SMOKE, smokeInParallel } from './support/smoke.js';
import { offerHub } from '../test/support/netns.js';

/**
 * Every benchmark, in the order a run takes them, each loaded when it runs: a process that runs one (a smoke run's
 * child, `npm run bench -- mcp`) loads only its modules and the packages they use (Playwright, WebdriverIO, Vite...).
 */
const ALL: ReadonlyArray<readonly [name: string, load: () => Promise<Benchmark>]> = [
  ['http-throughput', async () => (await import('./http-throughput.js')).httpThroughput],
  ['session-list', async () => (await import('./session-list.js')).sessionList],
  ['startup', async () => (await import('./startup.js')).startup],
  ['allocation', async () => (await import('./allocation.js')).allocation],
  ['screenshot', async () => (await import('./screenshot.js')).screenshot],
  ['live-screen', async () => (await import('./live-screen.js')).liveScreen],
  ['screenshot-during-feed', async () => (await import('./live-screen.js')).screenshotDuringFeed],
  ['asset-upload', async () => (await import('./asset-upload.js')).assetUpload],
  ['login-throttle', async () => (await import('./login-throttle.js')).loginThrottle],
  ['login-burst', async () => (await import('./login-throttle.js')).loginBurst],
  ['instance-ready', async () => (await import('./instance-ready.js')).instanceReady],
  ['terminal-echo', async () => (await import('./terminal.js')).terminalEcho],
  ['terminal-throughput', async () => (await import('./terminal.js')).terminalThroughput],
  ['sse-delivery', async () => (await import('./chat-events.js')).sseDelivery],
  ['first-delta', async () => (await import('./chat-events.js')).firstDelta],
  ['gui-bundle', async () => (await import('./gui.js')).guiBundle],
  ['fleet-screen', async () => (await import('./gui.js')).fleetScreen],
  ['gui-live-screen', async () => (await import('./gui.js')).guiLiveScreen],
  ['gui-tap-latency', async () => (await import('./gui-tap-latency.js')).guiTapLatency],
  ['ios', async () => (await import('./ios.js')).ios],
  ['wda-start', async () => (await import('./wda-start.js')).wdaStart],
  ['ios-tunnel', async () => (await import('./ios-tunnel.js')).iosTunnel],
  ['ws', async () => (await import('./ws.js')).wsRpc],
  ['mcp', async () => (await import('./mcp.js')).mcp],
  ['reservations', async () => (await import('./reservations.js')).reservations],
  ['release-cleanup', async () => (await import('./release-cleanup.js')).releaseCleanup],
  ['remote-connect', async () => (await import('./remote-connect.js')).remoteConnect],
  ['providers', async () => (await import('./providers.js')).providers],
  ['appium-direct', async () => (await import('./appium-direct.js')).appiumDirect],
  ['appium', async () => (await import('./appium.js')).appium],
];
const NAMES = ALL.map(([name]) => name);

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
const unknown = wanted.filter((name) => !NAMES.includes(name));
if (unknown.length > 0) {
  console.error(`Unknown benchmark: ${unknown.join(', ')}. Available: ${NAMES.join(', ')}.`);
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

// A smoke run runs on its bundle (support/bundle.ts): plain Node loads it in a fraction of the CPU tsx takes to load
// the benchmarks' TypeScript, and so does each simulated phone's process and each child of a run in parallel.
if (SMOKE && !process.env.BENCH_BUNDLE_DIR && process.env.BENCH_SMOKE_BUNDLE !== '0') {
  const { runBundled } = await import('./support/bundle.js');
  process.exit(await runBundled(process.argv.slice(2)));
}

/**
 * A benchmark someone adds to bench/ but not to ALL would never run, in CI or anywhere: what is wrong, if anything, for
 * a smoke run to fail on.
 */
async function unlisted(): Promise<string | undefined> {
  const listed = new Set<Benchmark>();
  for (const [name, load] of ALL) {
    const bench = await load();
    if (bench.name !== name) return `bench/run.ts lists ${bench.name} as ${name}.`;
    listed.add(bench);
  }
  const files = readdirSync(new URL('.', import.meta.url)).filter((f) => f.endsWith('.ts') && f !== 'run.ts');
  for (const file of files) {
    const exported = Object.values(await import(`./${file.slice(0, -'.ts'.length)}.ts`) as Record<string, unknown>)
      .filter((value): value is Benchmark => typeof value === 'object' && value !== null && 'name' in value && typeof (value as Benchmark).run === 'function');
    const missing = exported.filter((b) => !listed.has(b));
    if (missing.length > 0) return `bench/${file} exports ${missing.map((b) => b.name).join(', ')}, which bench/run.ts does not run: add it to ALL.`;
  }
  return undefined;
}

// A smoke run's benchmarks run two at a time, in two worker processes (smokeInParallel): on CI's two cores the
// benchmarks wait often enough (a phone's polling, a throttle's lockout, Appium) that two overlap well, and the run took
// 136 s where one after the other took 158 s. BENCH_SMOKE_JOBS=N runs N at a time; BENCH_SMOKE_JOBS=1 runs them one
// after the other, in this process (as does a smoke run of one benchmark). A smoke run's worker leaves the check that
// every benchmark is listed to its parent, which loads every benchmark for it while the workers start.
const jobs = Number(process.env.BENCH_SMOKE_JOBS || 2);
// The network hub the benchmarks' namespaces plug into (test/support/netns.ts), made before any of them starts a
// browser: a hub made midway would cancel what a Chromium beside it has in flight (net::ERR_NETWORK_CHANGED).
if (!process.env.BENCH_SMOKE_CHILD) offerHub();
const chosen = NAMES.filter((name) => wanted.length === 0 || wanted.includes(name));
if (SMOKE && !process.env.BENCH_SMOKE_CHILD) {
  const checked = unlisted();
  const report = (wrong: string | undefined) => {
    if (wrong) console.error(wrong);
    return wrong;
  };
  if (jobs > 1 && chosen.length > 1) {
    const [code, wrong] = await Promise.all([smokeInParallel(chosen, jobs), checked.then(report)]);
    process.exit(wrong ? 2 : code);
  }
  if (report(await checked)) process.exit(2);
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
/**
 * The benchmarks this process runs: the named ones (all if none), or, in a smoke run's worker (smokeInParallel), each
 * one its parent hands it when it asks for the next, until none is left. Before it asks, a worker tells its parent how
 * the last one went.
 */
async function* toRun(): AsyncGenerator<readonly [string, () => Promise<Benchmark>]> {
  if (!process.env.BENCH_SMOKE_WORKER || !process.send) {
    yield* ALL.filter(([name]) => wanted.length === 0 || wanted.includes(name));
    return;
  }
  for (;;) {
    const answer = new Promise<{ name?: string } | undefined>((resolve) => process.once('message', resolve));
    process.send({ next: true });
    const { name: next } = (await answer) ?? {};
    const entry = ALL.find(([name]) => name === next);
    if (!entry) return;
    yield entry;
  }
}

for await (const [name, load] of toRun()) {
  if (aborted) break;
  let ok = false;
  const begun = performance.now();
  const cpuBegun = cpuSeconds();
  try {
    const bench = await load();
    console.log(`\n${bench.name}: ${bench.title}`);
    const own = await bench.run();
    // A baseline that measured nothing (no samples, a zero) gives no ratio: the figure beside it compares nothing.
    const blind = own.filter((f) => /NaN|Infinity/.test(f.ratio));
    if (own.length === 0 || blind.length > 0) throw new Error(`no comparable figure: ${own.length === 0 ? 'none reported' : blind.map((f) => `${f.figure}: ${f.ratio}`).join('; ')}`);
    figures.push(...own);
    ok = true;
  } catch (error) {
    failed = true;
    if (aborted) break;
    console.error(`  ${name} could not finish: ${(error as Error).stack ?? error}`);
    const said = enginesLastLines();
    if (said) console.error(said);
  } finally {
    await cleanup();
    // The processes cleanup stopped are reaped (and their CPU counted) on the event loop's next turns.
    if (SMOKE) await new Promise((resolve) => setTimeout(resolve, 50));
    if (SMOKE) console.log(`  ${name}: ${((performance.now() - begun) / 1000).toFixed(1)} s (CPU ${(cpuSeconds() - cpuBegun).toFixed(1)} s)`);
    if (process.env.BENCH_SMOKE_WORKER) process.send?.({ done: name, ok });
  }
}

// An interrupted run exits from abort(), once its cleanup is done.
if (!aborted) {
  console.log(`\n${SMOKE ? 'Smoke run, one round at the smallest size: these figures measure nothing' : 'Summary'} (${((performance.now() - started) / 1000).toFixed(0)} s, ${process.platform}, node ${process.version}):\n`);
  printTable(figures);
  process.exit(failed ? 1 : 0);
}
