import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { onCleanup } from './cleanup.js';

export interface Child {
  readonly pid: number;
  /** Everything it printed so far, stdout and stderr interleaved. */
  output(): string;
  exited(): boolean;
  /** The first match of `pattern` in the output; rejects if the process exits or the time runs out first. */
  waitForOutput(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  /** Stops the process and every descendant it spawned, by PID. Safe to call twice. */
  stop(): Promise<void>;
}

/** The engines (`npm run serve`) the running benchmark started, with what each printed: a failure shows their last lines. */
const engines = new Set<Child>();

/** The last lines each engine still running printed: why a benchmark failed is often there, not in the client's error. */
export function enginesLastLines(lines = 30): string {
  return [...engines].map((child) => `the engine (pid ${child.pid}) printed last:\n${child.output().trimEnd().split('\n').slice(-lines).map((l) => `    ${l}`).join('\n')}`).join('\n');
}

/** Spawns a process with piped output. It is stopped at cleanup if the benchmark has not stopped it already. */
export function startChild(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Child {
  const proc = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  if (proc.pid === undefined) throw new Error(`could not spawn ${command}`);
  const pid = proc.pid;
  let output = '';
  let exit: string | undefined;
  proc.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  proc.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  proc.on('exit', (code, signal) => (exit = signal ?? `code ${code}`));

  let stopping: Promise<void> | undefined;
  const child: Child = {
    pid,
    output: () => output,
    exited: () => exit !== undefined,
    async waitForOutput(pattern, timeoutMs) {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        const match = pattern.exec(output);
        if (match) return match;
        if (exit !== undefined) throw new Error(`${command} exited (${exit}) before printing ${pattern}:\n${output}`);
        if (performance.now() > deadline) throw new Error(`${command} did not print ${pattern} within ${timeoutMs} ms:\n${output}`);
        await sleep(10);
      }
    },
    stop: () => (stopping ??= stopTree(pid)),
  };
  if (args.some((a) => a.endsWith('serve.mjs'))) engines.add(child);
  onCleanup(() => {
    engines.delete(child);
    return child.stop();
  });
  return child;
}

/** SIGTERM to the tree, leaves first (so the server shuts down cleanly), then SIGKILL to whatever outlives 5 s. */
async function stopTree(root: number): Promise<void> {
  const tree = [root, ...descendants(root)];
  for (const pid of [...tree].reverse()) signal(pid, 'SIGTERM');
  const deadline = performance.now() + 5000;
  while (tree.some(isAlive) && performance.now() < deadline) await sleep(20);
  for (const pid of tree.filter(isAlive)) signal(pid, 'SIGKILL');
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

/** Every process below pid, parents before their children, from /proc/<pid>/task/<tid>/children. */
export function descendants(pid: number): number[] {
  const found: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return found;
  }
  for (const tid of tasks) {
    let children: string;
    try {
      children = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8');
    } catch {
      continue;
    }
    for (const child of children.split(' ').filter(Boolean).map(Number)) found.push(child, ...descendants(child));
  }
  return found;
}

/** Alive and not a zombie: PID 1 here does not reap orphans, so exited grandchildren linger as <defunct>. */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** The process in root's tree (root included) that holds the socket listening on the TCP port. */
export function listeningPid(root: number, port: number): number {
  const sockets = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').trim().split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const localPort = parseInt(fields[1]!.split(':').pop()!, 16);
      if (localPort === port && fields[3] === '0A') sockets.add(`socket:[${fields[9]}]`);
    }
  }
  for (const pid of [root, ...descendants(root)]) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (sockets.has(readlinkSync(`/proc/${pid}/fd/${fd}`))) return pid;
      } catch {
        // the fd closed while we looked
      }
    }
  }
  throw new Error(`no process under PID ${root} listens on port ${port}`);
}

/** Resident set size in MB, from VmRSS in /proc/<pid>/status. */
export function rssMb(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for PID ${pid}`);
  return Number(match[1]) / 1024;
}

/** CPU time (user + system, every thread) a process has used so far, in ms: what load on the machine cannot inflate. */
export function cpuMs(pid: number): number {
  // Each thread's time on a CPU in nanoseconds (schedstat's first field), summed: stat's utime and stime count in
  // 10 ms ticks, which over a 5 s window is 0.2 % of a core a tick, as large as the differences measured.
  try {
    let ns = 0;
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // A thread that ended between the listing and the read.
      }
    }
    return ns / 1e6;
  } catch {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime, fields 14 and 15 of stat, in clock ticks (100 a second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  }
}

/** A loopback port that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}
