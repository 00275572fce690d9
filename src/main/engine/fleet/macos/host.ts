import { shellQuote as q } from '../../domain/shell-quote.js';
import { SshConnection, SshError, type ExecResult, type SshCredentials, type SshEndpoint } from './ssh.js';

export type HostMode = 'tart' | 'bare';

export interface MachineSize {
  cpuCores: number;
  memoryMb: number;
  diskMb: number;
}

/** Everything needed to drive one Mac: where it is, how to log in, and what each instance gets. */
export interface MacHostSpec {
  name: string;
  endpoint: SshEndpoint;
  /** The pinned host key fingerprint; null until the first successful connection. */
  hostKey: string | null;
  mode: HostMode;
  /** How to log in to a VM cloned from the base image, through the host. */
  vm: SshCredentials & { port: number };
  /** bare mode: the directory an instance works in, cleared on release; relative to the login's home unless absolute. */
  workDir: string;
}

/** What one instance is made from: fixed when it was created, so that editing the host later does not change it. */
export interface InstanceImage {
  baseImage: string;
  machine: MachineSize;
}

/** A VM as `tart list --format json` reports it. */
export interface TartVm {
  name: string;
  running: boolean;
}

/** A provisioning step that failed, and why, in words fit for an instance's statusMessage. */
export class StepError extends Error {
  override name = 'StepError';
  constructor(
    readonly step: string,
    readonly why: string,
    /** The SSH connection failed, not the command: the host itself may be down. */
    readonly connectionFailed = false,
  ) {
    super(`${step} failed: ${why}`);
  }
}

/** An SSH connection to an instance's own shell, for exec and terminals; close() also ends the jump through the host. */
export interface InstanceShell {
  ssh: SshConnection;
  /** Put before a command so that it runs in the instance's work dir (bare hosts); empty inside a VM. */
  commandPrefix: string;
  close(): void;
}

const CONNECT_TIMEOUT_MS = 10_000;
/** Pulling a base image the host does not have yet takes long: tens of GB. */
const CLONE_TIMEOUT_MS = 60 * 60_000;
const SHORT_STEP_MS = 60_000;
const IP_WAIT_SECONDS = 60;
/** sshd inside a fresh VM starts a little after the VM has an address. */
const VM_SSH_WAIT_MS = 60_000;
const VM_SSH_RETRY_MS = 1000;

/**
 * Homebrew puts tart in /opt/homebrew/bin, which a non-interactive SSH session on macOS does not have on its PATH.
 * Appended, so that a tart earlier on the PATH still wins.
 */
const WITH_PATH = 'export PATH="$PATH:/opt/homebrew/bin:/usr/local/bin"; ';

/** The first lines of a failed command's output, on one line: enough to say why, short enough for a status. */
function reason(result: ExecResult): string {
  const text = (result.stderr.trim() || result.stdout.trim()).replace(/\s+/g, ' ');
  if (result.timedOut) return `timed out${text ? ` (${text.slice(0, 200)})` : ''}`;
  if (!text) return result.exitCode === null ? `killed by ${result.signal ?? 'a signal'}` : `exit status ${result.exitCode}`;
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/** Runs one step's command; a non-zero exit, a timeout or a lost connection is that step's failure. */
async function step(conn: SshConnection, name: string, command: string, timeoutMs: number, signal?: AbortSignal): Promise<string> {
  let result: ExecResult;
  try {
    result = await conn.exec(WITH_PATH + command, { timeoutMs, signal });
  } catch (error) {
    throw new StepError(name, (error as Error).message, true);
  }
  if (result.exitCode !== 0) throw new StepError(name, reason(result));
  return result.stdout;
}

export function parseTartList(json: string): TartVm[] {
  const parsed = JSON.parse(json) as unknown;
  if (!Array.isArray(parsed)) throw new Error('tart list did not print a JSON array');
  return parsed
    .filter((vm): vm is Record<string, unknown> => typeof vm === 'object' && vm !== null && typeof (vm as { Name?: unknown }).Name === 'string')
    .map((vm) => ({ name: vm.Name as string, running: vm.Running === true || vm.State === 'running' }));
}

/** One Mac on the LAN, over SSH: a Tart host whose instances are VMs, or a bare host that is the instance. */
export class MacHost {
  constructor(readonly spec: MacHostSpec) {}

  /** A connection to the host itself; a refused, unreachable or mis-keyed host is the step "SSH to the host". */
  async connect(signal?: AbortSignal): Promise<SshConnection> {
    try {
      return await SshConnection.connect(this.spec.endpoint, { timeoutMs: CONNECT_TIMEOUT_MS, expectedHostKey: this.spec.hostKey, signal });
    } catch (error) {
      throw new StepError('SSH to the host', (error as Error).message, true);
    }
  }

  /** A health check: the host answers SSH and, in tart mode, tart lists its VMs. */
  async check(signal?: AbortSignal): Promise<{ hostKey: string; vms: TartVm[] | null }> {
    const conn = await this.connect(signal);
    try {
      if (this.spec.mode === 'bare') {
        await step(conn, 'a command on the host', 'true', SHORT_STEP_MS, signal);
        return { hostKey: conn.hostKey, vms: null };
      }
      return { hostKey: conn.hostKey, vms: await this.list(conn, signal) };
    } finally {
      conn.close();
    }
  }

  async list(conn: SshConnection, signal?: AbortSignal): Promise<TartVm[]> {
    const out = await step(conn, 'tart list', 'tart list --format json', SHORT_STEP_MS, signal);
    try {
      return parseTartList(out);
    } catch (error) {
      throw new StepError('tart list', (error as Error).message);
    }
  }

  /**
   * Brings an instance up and answers its address (a VM's IP; null on a bare host). Ready means a command has run
   * inside it. `resume` continues an instance whose provisioning an engine restart interrupted. `signal` stops it
   * between steps; `shutdown` also cuts short the clone, which runs on otherwise (see createVm).
   */
  async provision(name: string, image: InstanceImage, signal: AbortSignal, shutdown: AbortSignal, resume = false): Promise<{ address: string | null }> {
    const conn = await this.connect(signal);
    try {
      if (this.spec.mode === 'bare') {
        await step(conn, 'preparing the work dir', `mkdir -p ${this.workDir()} && cd ${this.workDir()}`, SHORT_STEP_MS, signal);
        return { address: null };
      }
      const existing = resume ? (await this.list(conn, signal)).find((vm) => vm.name === name) : undefined;
      if (!existing?.running) {
        if (existing) await step(conn, 'tart delete', `tart delete ${q(name)}`, SHORT_STEP_MS, signal);
        await this.createVm(conn, name, image, signal, shutdown);
      }
      const address = await this.waitForIp(conn, name, signal);
      const vm = await this.connectToVm(conn, address, signal, VM_SSH_WAIT_MS);
      try {
        await step(vm, 'a command in the VM', 'true', SHORT_STEP_MS, signal);
      } finally {
        vm.close();
      }
      return { address };
    } finally {
      conn.close();
    }
  }

  /** Removes what an instance left: its VM (stopped first), or the bare host's work dir. Idempotent. */
  async teardown(name: string, signal?: AbortSignal): Promise<void> {
    const conn = await this.connect(signal);
    try {
      if (this.spec.mode === 'bare') {
        await step(conn, 'clearing the work dir', `rm -rf ${this.workDir()}`, SHORT_STEP_MS, signal);
        return;
      }
      const vm = (await this.list(conn, signal)).find((v) => v.name === name);
      if (vm?.running) {
        // A VM that will not stop still gets its delete tried; only the delete decides whether teardown is done.
        await step(conn, 'tart stop', `tart stop ${q(name)}`, SHORT_STEP_MS, signal).catch(() => undefined);
      }
      if (vm) await step(conn, 'tart delete', `tart delete ${q(name)}`, SHORT_STEP_MS, signal);
      const { log, exit } = this.runFiles(name);
      await step(conn, 'removing the run log', `rm -f ${log} ${exit}`, SHORT_STEP_MS, signal);
    } finally {
      conn.close();
    }
  }

  /** A connection to the instance's own shell: the VM through the host, or the bare host. */
  async openShell(name: string, address: string | null): Promise<InstanceShell> {
    const conn = await this.connect();
    if (this.spec.mode === 'bare') {
      return { ssh: conn, commandPrefix: `cd ${this.workDir()} 2>/dev/null; `, close: () => conn.close() };
    }
    if (!address) {
      conn.close();
      throw new StepError('SSH into the VM', `the VM ${name} has no known address`);
    }
    try {
      const vm = await this.connectToVm(conn, address, undefined, 0);
      vm.whenClosed(() => conn.close());
      return { ssh: vm, commandPrefix: '', close: () => vm.close() };
    } catch (error) {
      conn.close();
      throw error;
    }
  }

  // ---- tart ----

  private async createVm(conn: SshConnection, name: string, image: InstanceImage, signal: AbortSignal, shutdown: AbortSignal): Promise<void> {
    const { cpuCores, memoryMb, diskMb } = image.machine;
    // Closing the channel does not stop tart clone on the Mac: a clone given up midway would land after teardown had
    // looked for it, and its VM would stay. So a release lets it finish, and teardown (which waits) deletes it. Only a
    // shutdown walks away; the next start's reconciliation finds the clone.
    await step(conn, 'tart clone', `tart clone ${q(image.baseImage)} ${q(name)}`, CLONE_TIMEOUT_MS, shutdown);
    signal.throwIfAborted();
    const diskGb = Math.ceil(diskMb / 1024);
    await step(conn, 'tart set', `tart set ${q(name)} --cpu ${cpuCores} --memory ${memoryMb} --disk-size ${diskGb}`, SHORT_STEP_MS, signal);
    await step(conn, 'tart set --random-mac', `tart set ${q(name)} --random-mac`, SHORT_STEP_MS, signal);
    const { log, exit } = this.runFiles(name);
    // Detached: tart run blocks for the VM's whole life. Its exit status lands in a file, so that a run that fails
    // at once (Apple's limit of two VMs) is told apart from one still booting.
    await step(
      conn,
      'tart run',
      `rm -f ${exit}; nohup sh -c 'tart run --no-graphics "$0"; echo $? > "$1"' ${q(name)} ${exit} > ${log} 2>&1 < /dev/null &`,
      SHORT_STEP_MS,
      signal,
    );
  }

  /** `tart ip --wait`, raced against tart run exiting: a run that failed is reported with its own output. */
  private async waitForIp(conn: SshConnection, name: string, signal: AbortSignal): Promise<string> {
    const watcher = new AbortController();
    const stopWatching = () => watcher.abort();
    signal.addEventListener('abort', stopWatching, { once: true });
    try {
      const ip = step(conn, 'tart ip', `tart ip --wait ${IP_WAIT_SECONDS} ${q(name)}`, (IP_WAIT_SECONDS + 30) * 1000, signal);
      const out = await Promise.race([ip, this.runExited(conn, name, watcher.signal)]);
      const address = out.trim().split('\n')[0]?.trim() ?? '';
      if (!/^[0-9A-Fa-f.:]+$/.test(address)) throw new StepError('tart ip', `it printed no address (${JSON.stringify(out.slice(0, 100))})`);
      return address;
    } finally {
      signal.removeEventListener('abort', stopWatching);
      watcher.abort();
    }
  }

  /** Settles only when tart run has exited: rejects with its output. While it runs, this stays pending. */
  private async runExited(conn: SshConnection, name: string, signal: AbortSignal): Promise<never> {
    const { log, exit } = this.runFiles(name);
    const polls = (IP_WAIT_SECONDS + 10) * 2;
    const result = await conn
      .exec(
        `i=0; while [ ! -e ${exit} ] && [ $i -lt ${polls} ]; do sleep 0.5; i=$((i+1)); done; ` +
          `[ -e ${exit} ] || exit 0; tail -c 1500 ${log}; exit 1`,
        { timeoutMs: (IP_WAIT_SECONDS + 20) * 1000, signal },
      )
      .catch(() => undefined);
    if (result?.exitCode === 1) {
      throw new StepError('tart run', reason({ ...result, stderr: result.stdout }) || 'it exited at once');
    }
    return new Promise<never>(() => {});
  }

  private async connectToVm(conn: SshConnection, address: string, signal: AbortSignal | undefined, waitMs: number): Promise<SshConnection> {
    const deadline = Date.now() + waitMs;
    const { port, ...credentials } = this.spec.vm;
    for (;;) {
      try {
        const channel = await conn.forwardOut(address, port);
        return await SshConnection.connect({ host: address, port, ...credentials }, { timeoutMs: CONNECT_TIMEOUT_MS, sock: channel, signal });
      } catch (error) {
        const message = (error as Error).message;
        // Wrong credentials will not get better by waiting; a VM whose sshd is not up yet will.
        if (/authentication failed/.test(message) || signal?.aborted || Date.now() >= deadline || !(error instanceof SshError)) {
          throw new StepError('SSH into the VM', message);
        }
        await new Promise((r) => setTimeout(r, VM_SSH_RETRY_MS));
      }
    }
  }

  private runFiles(name: string) {
    const base = `"\${TMPDIR:-/tmp}"/${q(name)}`;
    return { log: `${base}.log`, exit: `${base}.exit` };
  }

  private workDir(): string {
    const dir = this.spec.workDir;
    return dir.startsWith('/') ? q(dir) : `"$HOME"/${q(dir)}`;
  }
}
