/**
 * `npm run bench -- --smoke`, which CI runs after `npm test`: every benchmark once at its smallest size, to show that
 * it still finishes and that its baseline still does the same work as what it measures. Its figures measure nothing.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export const SMOKE = process.argv.includes('--smoke');

/**
 * CPU seconds this process and the children it has waited for (and theirs) have used so far: utime, stime, cutime and
 * cstime of /proc/self/stat. On a shared machine a benchmark's wall time says how busy the machine was; this says what
 * the benchmark cost. A daemon that left its parent (adb's server) is not counted.
 */
export function cpuSeconds(): number {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return NaN;
  }
}

/** A count, a window or a size: the measuring run's, or in a smoke run the smallest that still does the work once. */
export const sized = <T>(measuring: T, smoke: T): T => (SMOKE ? smoke : measuring);

/**
 * A counting window of `ms`; in a smoke run, lengthened until `moved()` says each side has counted something (for at
 * most 10 s more): a smoke run's windows are a few hundred ms, which a busy machine can pass without a single frame,
 * and a rate of 0 against 0 compares nothing.
 */
export async function countingWindow(ms: number, moved: () => boolean | Promise<boolean>): Promise<void> {
  await sleep(ms);
  if (!SMOKE) return;
  for (const deadline = performance.now() + 10_000; !(await moved()) && performance.now() < deadline;) await sleep(20);
}

/**
 * Runs each named benchmark's smoke run in a child process of its own, `concurrency` at a time, heaviest first, and
 * prints each one's output whole when it ends, so that the log reads as a sequential run's. A process per benchmark
 * also keeps what one starts (its adb server, Chromium, Appium, temp dirs) and its cleanup apart from the others'.
 * Resolves to the exit code: 1 if any benchmark failed or could not finish.
 */
export async function smokeInParallel(names: readonly string[], concurrency = Number(process.env.BENCH_SMOKE_JOBS) || 2): Promise<number> {
  const { spawn } = await import('node:child_process');
  const script = process.argv[1]!;
  // The slowest first (seconds of a sequential smoke run), so that the last ones to start are short.
  const order = [...names].sort((a, b) => (HEAVY.indexOf(a) + 1 || HEAVY.length + 1) - (HEAVY.indexOf(b) + 1 || HEAVY.length + 1));
  const started = performance.now();
  const failed: string[] = [];
  const runOne = (name: string) =>
    new Promise<void>((resolve) => {
      const child = spawn(process.execPath, [...process.execArgv, script, '--smoke', name], {
        env: { ...process.env, BENCH_SMOKE_CHILD: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.on('close', (code, signal) => {
        process.stdout.write(output);
        if (code !== 0) {
          failed.push(name);
          console.error(`  ${name}: the smoke run ended with ${signal ?? `exit code ${code}`}`);
        }
        resolve();
      });
    });
  const queue = [...order];
  const worker = async () => {
    for (let name = queue.shift(); name !== undefined; name = queue.shift()) await runOne(name);
  };
  // Stopped by CI or a person: the children get the signal too (same process group) and clean up after themselves.
  await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, worker));
  const seconds = ((performance.now() - started) / 1000).toFixed(0);
  console.log(`\nSmoke run of ${names.length} benchmarks, ${concurrency} at a time: ${seconds} s. ${failed.length === 0 ? 'Each finished, with a comparable figure.' : `Failed: ${failed.join(', ')}.`}`);
  return failed.length === 0 ? 0 : 1;
}

/** The benchmarks whose smoke runs take longest, slowest first (docs/performance.md). */
const HEAVY = ['appium', 'live-screen', 'providers', 'fleet-screen', 'appium-direct', 'gui-tap-latency', 'gui-live-screen', 'wda-start', 'ios', 'login-burst', 'ios-tunnel', 'screenshot-during-feed', 'terminal-echo', 'http-throughput', 'instance-ready'];
