/**
 * `npm run bench -- --smoke`, which CI runs after `npm test`: every benchmark once at its smallest size, to show that
 * it still finishes and that its baseline still does the same work as what it measures. Its figures measure nothing.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Build } from '../../test/e2e/support/browser.js';

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
 * The browser the GUI benchmarks drive: Debian's full Chromium when measuring, its headless shell (the same Blink for a
 * third less CPU) in a smoke run, whose figures measure nothing and whose time is CI's.
 */
export const BENCH_BROWSER: Build = SMOKE ? 'headless-shell' : 'chromium';

/**
 * The simulated phones' display: a Pixel 7's; a smoke run's is a quarter of it (the same density-independent size),
 * which a simulated phone draws, encodes and records in a quarter of the CPU. Viewers asking for 800 px see the same.
 */
export const BENCH_SCREEN = sized({ width: 1080, height: 2400, density: 420 }, { width: 540, height: 1200, density: 210 });

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
 * Runs the named benchmarks' smoke runs `concurrency` at a time, heaviest first, in as many worker processes, each of
 * which runs one benchmark after another as the sequential run does (its cleanup after each) and asks for the next
 * when it is done: a worker loads the modules two of its benchmarks share once, where a process per benchmark loaded
 * them (and the run's own) 30 times. Each benchmark's output is printed whole when it ends, so that the log reads as a
 * sequential run's. What one worker starts (its adb server, Chromium, Appium, temp dirs) and its cleanup stay apart
 * from the other's. The benchmarks that mostly wait (WAITING) run in one more worker of their own beside the others:
 * on two cores a third worker of busy benchmarks made the run slower, but these use a fraction of a core while they
 * wait on a lockout or a baseline's polling. Resolves to the exit code: 1 if any benchmark failed or a worker could
 * not finish.
 */
export async function smokeInParallel(names: readonly string[], concurrency: number): Promise<number> {
  const { spawn } = await import('node:child_process');
  const script = process.argv[1]!;
  // The slowest first (seconds of a sequential smoke run), so that the last ones to start are short.
  const busy = [...names].filter((name) => !WAITING.includes(name)).sort((a, b) => (HEAVY.indexOf(a) + 1 || HEAVY.length + 1) - (HEAVY.indexOf(b) + 1 || HEAVY.length + 1));
  const waiting = names.filter((name) => WAITING.includes(name));
  const started = performance.now();
  const failed: string[] = [];
  let workers = 0;
  const worker = (queue: string[]) =>
    new Promise<void>((resolve) => {
      // Each worker's number goes into its namespaces' addresses on the network hub (test/support/netns.ts): two
      // providers of two benchmarks running at once once had the same address, and one's SSH link dropped.
      const child = spawn(process.execPath, [...process.execArgv, script, '--smoke'], {
        env: { ...process.env, BENCH_SMOKE_CHILD: '1', BENCH_SMOKE_WORKER: String(++workers) },
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      });
      let output = '';
      let running: string | undefined;
      const flush = () => {
        process.stdout.write(output);
        output = '';
      };
      child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.on('message', (message: { next?: boolean; done?: string; ok?: boolean }) => {
        if (message.done !== undefined) {
          if (!message.ok) failed.push(message.done);
          running = undefined;
        }
        if (!message.next) return;
        // Its output so far is its last benchmark's, whole (a message can overtake the pipe's last chunk: the next
        // benchmark's output starts with its title's line, so at worst a line moves to it).
        flush();
        running = queue.shift();
        child.send({ name: running });
      });
      child.on('close', (code, signal) => {
        flush();
        if (running !== undefined) failed.push(running);
        if (code !== 0 && running === undefined && failed.length === 0) failed.push('(a worker)');
        if (code !== 0) console.error(`  a smoke worker ended with ${signal ?? `exit code ${code}`}`);
        resolve();
      });
    });
  // Stopped by CI or a person: the workers get the signal too (same process group) and clean up after themselves.
  await Promise.all([
    ...Array.from({ length: Math.min(concurrency, busy.length) }, () => worker(busy)),
    ...(waiting.length > 0 ? [worker(waiting)] : []),
  ]);
  const seconds = ((performance.now() - started) / 1000).toFixed(0);
  console.log(`\nSmoke run of ${names.length} benchmarks, ${concurrency} at a time${waiting.length > 0 ? ` (and ${waiting.join(' and ')}, which mostly wait, beside them)` : ''}: ${seconds} s. ${failed.length === 0 ? 'Each finished, with a comparable figure.' : `Failed: ${failed.join(', ')}.`}`);
  return failed.length === 0 ? 0 : 1;
}

/**
 * The benchmarks whose smoke runs mostly wait: login-burst on the login throttle's lockout (1.9 s of CPU in 7.3 s),
 * wda-start on its baseline, appium-ios-device's Xctest.start(), which polls each reply every 500 ms (4.6 s in 12 s).
 */
const WAITING = ['login-burst', 'wda-start'];

/** The busy benchmarks whose smoke runs take longest, slowest first (docs/performance.md). */
const HEAVY = ['appium', 'live-screen', 'providers', 'fleet-screen', 'appium-direct', 'gui-tap-latency', 'gui-live-screen', 'ios', 'ios-tunnel', 'screenshot-during-feed', 'terminal-echo', 'http-throughput', 'instance-ready'];
