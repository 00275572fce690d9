import { appendFileSync, readFileSync } from 'node:fs';
import { afterAll, expect } from 'vitest';

/**
 * With BENCHTOP_TEST_CPU_LOG=<file>, each test file appends the CPU its worker used while it ran, in seconds: the
 * worker's own (the engines and simulated phones a file runs in-process) and its reaped children's (Appium, adb
 * servers, engines in child processes; a worker's shared Chromium is reaped only when the worker ends). On a 2-core
 * machine the suite's time is its CPU: this is how to find the files that cost it (docs/performance.md).
 */
const log = process.env.BENCHTOP_TEST_CPU_LOG;
if (log) {
  // utime, stime, cutime and cstime, in clock ticks (100 a second on Linux).
  const ticks = () => {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
    return { own: Number(fields[11]) + Number(fields[12]), children: Number(fields[13]) + Number(fields[14]) };
  };
  const start = ticks();
  const started = performance.now();
  afterAll(() => {
    const end = ticks();
    const file = expect.getState().testPath?.replace(`${process.cwd()}/`, '');
    appendFileSync(log, `${JSON.stringify({ file, own: (end.own - start.own) / 100, children: (end.children - start.children) / 100, wall: (performance.now() - started) / 1000 })}\n`);
  });
}
