import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A parent that dies (a crash, a SIGKILL) cannot stop its children: this guard, between the engine and a child of the
 * lab's (Appium, the private adb server), ends the child's whole process group (itself, the child and whatever the child
 * started) when the engine's end of its stdin pipe closes. It tells the engine the child's pid on fd 3.
 */
const GUARD = [
  "const { spawn } = require('node:child_process');",
  "const { writeSync } = require('node:fs');",
  "const [command, ...args] = process.argv.slice(1);",
  "const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit'] });",
  "child.on('spawn', () => writeSync(3, `${child.pid}\\n`));",
  "child.on('error', () => process.exit(1));",
  "child.on('exit', (code) => process.exit(code ?? 1));",
  "const orphaned = () => process.kill(-process.pid, 'SIGKILL');",
  "process.stdin.on('end', orphaned).on('error', orphaned).resume();",
  "process.on('SIGTERM', () => child.kill('SIGTERM'));",
].join('\n');

/** What tells a process apart from a later one that reuses its pid: its start time (since boot) and command line. */
interface ProcessIdentity {
  pid: number;
  start: string;
  cmdline: string;
}

/** What a pid file keeps: the engine that started the child, and the guard and the child themselves. */
interface PidFile {
  engine: ProcessIdentity;
  processes: ProcessIdentity[];
}

/** Undefined when the process is gone (or this system has no /proc: the guard alone then covers a crash). */
function identity(pid: number): ProcessIdentity | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    // A zombie (PID 1 may not reap) has an empty command line: it holds nothing.
    if (!cmdline) return undefined;
    // Fields after the command name, which may itself hold spaces: the start time is field 22 of proc(5).
    return { pid, start: stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!, cmdline };
  } catch {
    return undefined;
  }
}

const same = (a: ProcessIdentity) => {
  const now = identity(a.pid);
  return now !== undefined && now.start === a.start && now.cmdline === a.cmdline;
};

/** Ends the guard's process group: the guard, its child and everything the child started. */
export function killGroup(guard: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-guard.pid!, signal);
  } catch {
    // Gone already.
  }
}

/**
 * Starts `command` behind a guard, in a process group of its own (a kill of the group reaches all of it, and a Ctrl+C
 * meant for the engine does not), and keeps a pid file naming the guard and the child while they run, for the next
 * start of the same data dir should both outlive the engine (`endLeftovers`). Answers the guard: its stdout and
 * stderr are the child's.
 */
export function spawnGuarded(command: string, args: string[], options: { env: NodeJS.ProcessEnv; pidFile: string; output: 'pipe' | 'ignore' }): ChildProcess {
  const stdio: StdioOptions = ['pipe', options.output, options.output, 'pipe'];
  const guard = spawn(process.execPath, ['-e', GUARD, command, ...args], { env: { ...options.env, ELECTRON_RUN_AS_NODE: '1' }, stdio, detached: true });
  guard.stdin!.on('error', () => undefined);
  const pids = guard.stdio[3] as NodeJS.ReadableStream;
  let text = '';
  pids.setEncoding('utf8');
  pids.on('data', (chunk: string) => {
    text += chunk;
    if (!text.endsWith('\n')) return;
    const engine = identity(process.pid);
    const processes = [identity(guard.pid!), identity(Number(text))].filter((p) => p !== undefined);
    if (!engine || processes.length === 0) return;
    mkdirSync(join(options.pidFile, '..'), { recursive: true, mode: 0o700 });
    const temporary = `${options.pidFile}.${process.pid}`;
    writeFileSync(temporary, JSON.stringify({ engine, processes } satisfies PidFile), { mode: 0o600 });
    renameSync(temporary, options.pidFile);
  });
  guard.once('exit', () => rmSync(options.pidFile, { force: true }));
  return guard;
}

/** Stops a guarded child: SIGTERM, then SIGKILL of its whole group after `graceMs`. */
export async function stopGuarded(guard: ChildProcess, graceMs: number): Promise<void> {
  if (guard.exitCode !== null || guard.signalCode !== null) return;
  const exited = new Promise((resolve) => guard.once('exit', resolve));
  guard.kill('SIGTERM');
  const killed = setTimeout(() => killGroup(guard, 'SIGKILL'), graceMs);
  await exited;
  clearTimeout(killed);
}

/**
 * At start: what an engine of this data dir that died (its guards killed with it) left running. A process is ended
 * only while it is the very one the pid file names (same start time and command line, never a reused pid) and the
 * engine that started it is gone. Answers how many were ended.
 */
export function endLeftovers(dir: string, log: (message: string) => void): number {
  let files: string[];
  try {
    files = readdirSync(dir).filter((name) => name.endsWith('.json'));
  } catch {
    return 0;
  }
  let ended = 0;
  for (const name of files) {
    const path = join(dir, name);
    let recorded: PidFile;
    try {
      recorded = JSON.parse(readFileSync(path, 'utf8')) as PidFile;
    } catch {
      rmSync(path, { force: true });
      continue;
    }
    if (same(recorded.engine)) continue;
    for (const leftover of recorded.processes.filter(same)) {
      process.kill(leftover.pid, 'SIGKILL');
      ended++;
      log(`Ended pid ${leftover.pid} (${name.replace(/\.json$/, '')}), left running by an earlier run of this data dir`);
    }
    rmSync(path, { force: true });
  }
  return ended;
}
