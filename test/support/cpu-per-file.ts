import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { afterAll, expect } from 'vitest';

/**
 * With BENCHTOP_TEST_CPU_LOG=<file>, each test file appends the CPU its worker used while it ran, in seconds: the
 * worker's own (the engines and simulated phones a file runs in-process), its reaped children's (Appium, adb servers,
 * engines in child processes), and its Chromium's (the worker's shared browser and every process under it, live or
 * ended). On a 2-core machine the suite's time is its CPU: this is how to find the files that cost it
 * (docs/performance.md).
 */
const log = process.env.BENCHTOP_TEST_CPU_LOG;

/** utime, stime, cutime and cstime of a process, in clock ticks (100 a second on Linux). */
function stat(pid: number | 'self'): { comm: string; ppid: number; own: number; children: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = text.lastIndexOf(')');
    const fields = text.slice(close + 2).split(' ');
    return { comm: text.slice(text.indexOf('(') + 1, close), ppid: Number(fields[1]), own: Number(fields[11]) + Number(fields[12]), children: Number(fields[13]) + Number(fields[14]) };
  } catch {
    return undefined; // ended meanwhile
  }
}

/**
 * The CPU of every Chromium process under this worker: each live one's own and what its ended children used (a
 * process's reaped children are in its cutime), so that nothing is counted twice.
 */
function chromiumTicks(): number {
  const processes = new Map<number, NonNullable<ReturnType<typeof stat>>>();
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    const s = Number.isInteger(pid) ? stat(pid) : undefined;
    if (!s) continue;
    processes.set(pid, s);
    children.set(s.ppid, [...(children.get(s.ppid) ?? []), pid]);
  }
  let ticks = 0;
  const walk = (pid: number, inChromium: boolean) => {
    for (const child of children.get(pid) ?? []) {
      const s = processes.get(child)!;
      const chromium = inChromium || s.comm.startsWith('chromium'); // chromium, or chromium-headless-shell cut to 15 characters
      if (chromium) ticks += s.own + s.children;
      walk(child, chromium);
    }
  };
  walk(process.pid, false);
  return ticks;
}

if (log) {
  const ticks = () => {
    const self = stat('self')!;
    return { own: self.own, children: self.children, chromium: chromiumTicks() };
  };
  const start = ticks();
  const started = performance.now();
  afterAll(() => {
    const end = ticks();
    const file = expect.getState().testPath?.replace(`${process.cwd()}/`, '');
    const spent = (key: keyof typeof start) => (end[key] - start[key]) / 100;
    appendFileSync(log, `${JSON.stringify({ file, own: spent('own'), children: spent('children'), chromium: spent('chromium'), wall: (performance.now() - started) / 1000 })}\n`);
  });
}
