import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { keygen, prepareSshd } from '../sshd-config.js';

const SSHD = '/usr/sbin/sshd';
const HERE = dirname(fileURLToPath(import.meta.url));

/** Mac host tests need Debian's openssh-server: under CI its absence is a failure, elsewhere they are skipped loudly. */
export function sshdOrSkip(): boolean {
  const found = existsSync(SSHD) && hasKeygen();
  if (found) return true;
  if (process.env.CI === 'true') {
    throw new Error('sshd is missing: install the Debian package `openssh-server` (apt-get install -y openssh-server).');
  }
  console.warn('SKIPPING Mac host tests: sshd is not installed (apt-get install -y openssh-server).');
  return false;
}

function hasKeygen(): boolean {
  try {
    execFileSync('ssh-keygen', ['-?'], { stdio: 'ignore' });
  } catch (error) {
    // ssh-keygen -? prints its usage and exits 1; only a missing binary is ENOENT.
    return (error as NodeJS.ErrnoException).code !== 'ENOENT';
  }
  return true;
}

/** A VM as the scripted tart keeps it. */
export interface SimVm {
  name: string;
  running: boolean;
  source: string;
  cpu: number;
  memoryMb: number;
  diskGb: number;
  mac: string;
}

/**
 * A simulated Mac: the real OpenSSH sshd on loopback, logging in the current user with a generated key, with a
 * scripted `tart` first on the sessions' PATH. The "VMs" it runs answer on 127.0.0.1, so a jump into one reaches
 * the same sshd.
 */
export interface MacHostSim {
  address: string;
  port: number;
  username: string;
  privateKey: string;
  /** A temp dir of this host's own. */
  dir: string;
  /** $HOME of its SSH sessions (a temp dir: the real user's home and its shell startup files stay out of it). */
  home: string;
  vms(): SimVm[];
  /** Runs the scripted tart directly on the "Mac", as someone at its keyboard would. */
  tart(...args: string[]): string;
  /** Every tart invocation so far, as its argument lines. */
  calls(): string[];
  /** Makes `tart clone` fail with this message (null: succeed again). */
  failClone(message: string | null): void;
  /** Makes `tart clone` take this long (null: at once again). */
  slowClone(seconds: number | null): void;
  /** While held, `tart ip` does not answer: provisioning hangs there. */
  holdIp(held: boolean): void;
  /** The body of POST /lab/hosts for this host. */
  hostBody(overrides?: Record<string, unknown>): Record<string, unknown>;
  /** The machine goes away: sshd and every session it started are killed. */
  kill(): void;
  /** sshd starts again on the same port with the same host key. */
  restart(): Promise<void>;
  /** sshd starts again on the same port with a new host key: another machine, or one being impersonated. */
  rekey(): Promise<void>;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The pids of every descendant of a process, from /proc. */
function descendants(root: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parentOf.set(Number(entry), Number(fields[1]));
    } catch {
      /* the process ended while we looked */
    }
  }
  const found: number[] = [];
  const walk = (pid: number) => {
    for (const [child, parent] of parentOf) {
      if (parent === pid) {
        found.push(child);
        walk(child);
      }
    }
  };
  walk(root);
  return found;
}

export async function startMacHost(): Promise<MacHostSim> {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-mac-'));
  const bin = join(dir, 'bin');
  const state = join(dir, 'tart');
  const tmp = join(dir, 'tmp');
  const home = join(dir, 'home');
  for (const d of [bin, state, tmp, home]) mkdirSync(d);
  copyFileSync(join(HERE, 'tart'), join(bin, 'tart'));
  chmodSync(join(bin, 'tart'), 0o755);
  const port = await freePort();
  prepareSshd(dir, '127.0.0.1', [
    // The scripted tart first on the PATH, its state dir, and a TMPDIR of its own for the engine's run logs. A HOME
    // of its own too: the login user's real home (and the shell startup files there) stays untouched.
    `SetEnv PATH=${bin}:/usr/local/bin:/usr/bin:/bin TART_SIM_HOME=${state} TMPDIR=${tmp} HOME=${home}`,
  ]);

  let sshd: ChildProcess | undefined;
  let log = '';
  const start = () =>
    new Promise<void>((resolve, reject) => {
      const child = spawn(SSHD, ['-D', '-e', '-p', String(port), '-f', join(dir, 'sshd_config')], { stdio: ['ignore', 'ignore', 'pipe'] });
      sshd = child;
      const timer = setTimeout(() => reject(new Error(`sshd did not start within 5 s:\n${log}`)), 5000);
      child.stderr!.on('data', (chunk: Buffer) => {
        log += chunk.toString();
        if (log.length > 100_000) log = log.slice(-50_000);
        if (/Server listening on 127\.0\.0\.1/.test(log)) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`sshd exited with ${code}:\n${log}`));
      });
    });
  const kill = () => {
    const child = sshd;
    sshd = undefined;
    if (!child?.pid || child.exitCode !== null) return;
    const all = [child.pid, ...descendants(child.pid)];
    for (const pid of all) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  };
  // The scripted tart may delete a VM between listing its folder and reading a file of it (a failed start cleans up):
  // a file that is gone reads as empty, as one never written does.
  const file = (path: string) => {
    try {
      return readFileSync(path, 'utf8').trim();
    } catch {
      return '';
    }
  };

  await start();
  const privateKey = readFileSync(join(dir, 'id'), 'utf8');
  const username = userInfo().username;
  return {
    address: '127.0.0.1',
    port,
    username,
    privateKey,
    dir,
    home,
    vms() {
      const root = join(state, 'vms');
      if (!existsSync(root)) return [];
      return readdirSync(root).map((name) => {
        const vm = join(root, name);
        return {
          name,
          running: existsSync(join(vm, 'running')),
          source: file(join(vm, 'source')),
          cpu: Number(file(join(vm, 'cpu'))),
          memoryMb: Number(file(join(vm, 'memory'))),
          diskGb: Number(file(join(vm, 'disk'))),
          mac: file(join(vm, 'mac')),
        };
      });
    },
    tart: (...args) => execFileSync(join(bin, 'tart'), args, { env: { ...process.env, TART_SIM_HOME: state }, encoding: 'utf8' }),
    calls: () => file(join(state, 'calls.log')).split('\n').filter(Boolean),
    failClone(message) {
      if (message === null) rmSync(join(state, 'fail-clone'), { force: true });
      else writeFileSync(join(state, 'fail-clone'), message);
    },
    slowClone(seconds) {
      if (seconds === null) rmSync(join(state, 'clone-seconds'), { force: true });
      else writeFileSync(join(state, 'clone-seconds'), String(seconds));
    },
    holdIp(held) {
      if (held) writeFileSync(join(state, 'hold-ip'), '');
      else rmSync(join(state, 'hold-ip'), { force: true });
    },
    hostBody: (overrides = {}) => ({
      name: `mac-${port}`,
      address: '127.0.0.1',
      port,
      username,
      privateKey,
      mode: 'tart',
      baseImage: 'ghcr.io/cirruslabs/macos-sequoia-base:latest',
      cpuCores: 4,
      memoryMb: 8192,
      diskMb: 61_440,
      // The "VM" is this same sshd, reached through the host.
      vmUsername: username,
      vmPort: port,
      vmPrivateKey: privateKey,
      ...overrides,
    }),
    kill,
    restart: start,
    async rekey() {
      kill();
      rmSync(join(dir, 'host_key'));
      rmSync(join(dir, 'host_key.pub'));
      keygen(join(dir, 'host_key'));
      await start();
    },
    async stop() {
      kill();
      // Removing the VMs' markers ends every scripted `tart run` still looping, wherever it was reparented. A
      // scripted `tart clone` that was mid-copy can still write a file while the tree goes (ENOTEMPTY on CI once), so
      // the removal retries until the last of them has ended.
      try {
        rmSync(dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
      } catch {
        // One still writing after all that (a full run on two loaded cores): ended by its command line, then removed.
        for (const pid of processesNaming(dir)) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // ended meanwhile
          }
        }
        rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
      }
    },
  };
}

/** The processes whose command line names `path` (the simulated host's scripted tart, with its dir in its arguments). */
function processesNaming(path: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(path)) pids.push(Number(name));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return pids;
}
