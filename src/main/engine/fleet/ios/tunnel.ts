import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect, createServer, isIPv6, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { spawnGuarded, stopGuarded } from '../guarded-child.js';

/**
 * go-ios (npm `go-ios` 1.2.0) carries its binaries for Linux, macOS and Windows in its tarball; the lab runs the one
 * for this machine where npm put it, never through its postinstall (which copies it into npm's prefix).
 * BENCHTOP_GO_IOS names another binary, or "off" for none.
 */
export function findGoIos(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform, arch: string = process.arch): string | null {
  if (env.BENCHTOP_GO_IOS === 'off') return null;
  if (env.BENCHTOP_GO_IOS) return env.BENCHTOP_GO_IOS;
  const os = platform === 'win32' ? 'windows' : platform;
  const goArch = arch === 'x64' ? 'amd64' : arch;
  let root: string;
  try {
    root = dirname(createRequire(import.meta.url).resolve('go-ios/package.json'));
  } catch {
    return null;
  }
  const binary = join(root, 'dist', `go-ios-${os}-${goArch}_${os}_${goArch}`, platform === 'win32' ? 'ios.exe' : 'ios');
  return existsSync(binary) ? binary : null;
}

/** The proxy settings go-ios reads, under either spelling. */
const PROXY_VARIABLES = ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy'];

/**
 * A go-ios process's environment: the engine's, with `extra`. go-ios 1.2.0 sends every HTTP request of its own through
 * HTTP_PROXY or HTTPS_PROXY when either is set (ios.UseHttpProxy; NO_PROXY is not read), its questions to its tunnel
 * agent on 127.0.0.1 included, which a proxy elsewhere cannot answer: only a command that goes to the internet (the
 * image mount, which asks Apple's signing server) keeps them.
 */
export function goIosEnv(extra: Record<string, string>, internet = false): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  if (!internet) for (const name of PROXY_VARIABLES) delete env[name];
  return env;
}

/** What go-ios's agent says of a tunnel (GET /tunnel/<udid>): the phone's address inside it, RSD's port, and the local proxy port. */
export interface TunnelInfo {
  address: string;
  rsdPort: number;
  userspaceTunPort: number;
}

export interface UserspaceTunnelOptions {
  binary: string;
  /** The lab's usbmuxd in USBMUXD_SOCKET_ADDRESS's format, which go-ios honours. */
  usbmuxd: string;
  /** Where the guarded processes' pid files go (ended by the next start of the same data dir should the engine die). */
  pidDir: string;
  /** go-ios's --pair-record-path: where it keeps its own tunnel identity (selfIdentity.plist). */
  workDir: string;
  /** A free loopback port for the agent's HTTP API (go-ios's tunnel-info port); the proxy takes the ports after it. */
  freePort?: () => Promise<number>;
  log: (message: string) => void;
}

/** go-ios failed: its last complaint, in its words, for the fleet's steps. */
export class GoIosError extends Error {}

const INFO_TIMEOUT_MS = 15_000;
const STOP_GRACE_MS = 1000;
const PORT_ATTEMPTS = 3;

/** Where go-ios's ports are looked for: above the well-known services, below the kernel's ephemeral range. */
const FIRST_PAIR_PORT = 20000;

/** The lowest port the kernel hands out as a connection's source port; 32768 where it cannot be read (macOS: 49152). */
function ephemeralPortsFrom(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > FIRST_PAIR_PORT + 1000 ? low : 32768;
  } catch {
    return 32768;
  }
}

const listens = (port: number) =>
  new Promise<ReturnType<typeof createServer> | undefined>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });

/**
 * A loopback port nothing listens on now, with the next one free too (go-ios's proxy takes the port after its API's).
 * It is below the ephemeral range, which outgoing connections draw their source ports from: go-ios binds its proxy
 * port again each time it reopens a tunnel (a phone plugged in again), and a port from that range was taken meanwhile
 * by some connection in a full test run ("bind: address already in use", no tunnel for 30 s). Here only another
 * program's own bind can take it.
 */
export async function freePortPair(): Promise<number> {
  const span = ephemeralPortsFrom() - 1 - FIRST_PAIR_PORT;
  for (;;) {
    const port = FIRST_PAIR_PORT + Math.floor(Math.random() * span);
    const [first, next] = await Promise.all([listens(port), listens(port + 1)]);
    await Promise.all([first, next].map((server) => server && new Promise((r) => server.close(r))));
    if (first && next) return port;
  }
}

/** One JSON log line of go-ios (log/slog): its message and error, if it is one. */
function complaint(line: string): string | undefined {
  try {
    const entry = JSON.parse(line) as { level?: string; msg?: string; error?: string; err?: string };
    if (entry.level !== 'ERROR' && entry.level !== 'WARN') return undefined;
    const why = entry.error ?? entry.err;
    return why ? `${entry.msg}: ${why}` : entry.msg;
  } catch {
    return line.trim() || undefined;
  }
}

/**
 * One iPhone's CoreDeviceProxy tunnel (iOS 17.4+), opened by go-ios without root or a TUN device: `ios tunnel start
 * --userspace --udid <udid>` is an agent for that phone alone, on a tunnel-info port of its own (so that two engines,
 * or two phones, never share go-ios's default 60105). Its TCP/IP stack runs in the agent; a local process reaches a port
 * on the phone through the agent's proxy port: it connects there and first sends the phone's IPv6 address (16 bytes)
 * and the port (4 bytes, little-endian), after which the connection is that port's. `ios runwda` finds the tunnel
 * through the same agent and starts WebDriverAgent through RSD, testmanagerd and appservice, as Xcode 15+ does.
 *
 * Every go-ios process is guarded (guarded-child.ts): killed with the engine, and ended at the next start of the data
 * dir should the engine die. `onExit` says when one ends without being asked to.
 */
export class UserspaceTunnel {
  info: TunnelInfo | undefined;
  /** The agent's HTTP API port (go-ios's --tunnel-info-port). */
  agentPort: number | undefined;
  private agent: ChildProcess | undefined;
  private runner: ChildProcess | undefined;
  private closed = false;
  private readonly complaints: string[] = [];

  constructor(
    readonly udid: string,
    private readonly options: UserspaceTunnelOptions,
    /** A go-ios process ended on its own (it crashed, was killed, or the phone went away): what ended, and its last complaint. */
    private readonly onExit: (what: 'tunnel' | 'runner', why: string) => void = () => undefined,
  ) {}

  /** The processes' pids (the guards'; a kill of a guard's group reaches go-ios too), for a test or a leak check. */
  pids(): { tunnel?: number; runner?: number } {
    return { tunnel: this.agent?.pid, runner: this.runner?.pid };
  }

  /** Starts the agent and waits for its tunnel: resolves with where the phone is inside it. */
  async open(): Promise<TunnelInfo> {
    for (let attempt = 1; ; attempt++) {
      const port = await (this.options.freePort ?? freePortPair)();
      try {
        return await this.openOn(port);
      } catch (error) {
        // A port free when chosen may be taken before go-ios binds it: it exits saying so, and another is tried.
        if (!(error instanceof PortInUse) || attempt === PORT_ATTEMPTS || this.closed) throw error;
      }
    }
  }

  private async openOn(port: number): Promise<TunnelInfo> {
    mkdirSync(this.options.workDir, { recursive: true, mode: 0o700 });
    this.agentPort = port;
    const agent = this.spawn('tunnel', [
      'tunnel', 'start', '--userspace', `--udid=${this.udid}`, `--tunnel-info-port=${port}`, `--pair-record-path=${this.options.workDir}`,
    ]);
    this.agent = agent;
    const exited = new Promise<never>((_, reject) =>
      agent.once('exit', () => {
        const why = this.lastComplaint() ?? 'go-ios exited';
        reject(/address already in use/i.test(why) ? new PortInUse(why) : new GoIosError(why));
      }));
    exited.catch(() => undefined);
    const deadline = Date.now() + INFO_TIMEOUT_MS;
    for (;;) {
      if (this.closed) throw new GoIosError('the tunnel was closed');
      // The agent gives up on a phone (and retries it only 30 s later) with "failed to start tunnel": said at once.
      const failed = this.complaints.find((c) => c.startsWith('failed to start tunnel'));
      if (failed) throw new GoIosError(failed);
      const info = await Promise.race([this.query(port), exited]).catch((error: Error) => {
        if (error instanceof GoIosError || error instanceof PortInUse) throw error;
        return undefined;
      });
      if (info) {
        this.info = info;
        return info;
      }
      if (Date.now() > deadline) throw new GoIosError(this.lastComplaint() ?? `go-ios opened no tunnel within ${INFO_TIMEOUT_MS / 1000} s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** GET /tunnel/<udid> on the agent: the tunnel, or undefined while it has none. */
  private async query(port: number): Promise<TunnelInfo | undefined> {
    const response = await fetch(`http://127.0.0.1:${port}/tunnel/${encodeURIComponent(this.udid)}`, { signal: AbortSignal.timeout(2000) });
    if (response.status !== 200) {
      await response.body?.cancel();
      return undefined;
    }
    const info = (await response.json()) as Partial<TunnelInfo>;
    if (typeof info.address !== 'string' || !isIPv6(info.address) || !info.userspaceTunPort) return undefined;
    return { address: info.address, rsdPort: Number(info.rsdPort), userspaceTunPort: Number(info.userspaceTunPort) };
  }

  /** A TCP connection to `port` on the phone, through the agent's proxy. */
  connect(port: number): Promise<Socket> {
    const info = this.info;
    if (!info || this.closed) return Promise.reject(new Error(`The tunnel to ${this.udid} is not open.`));
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port: info.userspaceTunPort, noDelay: true });
      socket.once('error', reject);
      socket.once('connect', () => {
        socket.off('error', reject);
        socket.on('error', () => undefined);
        const target = Buffer.alloc(20);
        ipv6Bytes(info.address).copy(target, 0);
        target.writeUInt32LE(port, 16);
        socket.write(target);
        resolve(socket);
      });
    });
  }

  /**
   * `ios runwda` through this tunnel: WebDriverAgent's runner started the way Xcode 15+ starts a test runner, serving
   * HTTP on 8100 and MJPEG on 9100 for as long as the process runs.
   */
  runWda(bundleId: string): void {
    if (!this.agentPort) throw new GoIosError('the tunnel is not open');
    this.runner = this.spawn('runner', [
      'runwda', `--udid=${this.udid}`, `--tunnel-info-port=${this.agentPort}`,
      `--bundleid=${bundleId}`, `--testrunnerbundleid=${bundleId}`, '--xctestconfig=WebDriverAgentRunner.xctest',
      '--env=USE_PORT=8100', '--env=MJPEG_SERVER_PORT=9100',
    ]);
  }

  /** Whether the runner process is still running. */
  runnerAlive(): boolean {
    return !!this.runner && this.runner.exitCode === null && this.runner.signalCode === null;
  }

  /** go-ios's last warning or error, in its words. */
  lastComplaint(): string | undefined {
    return this.complaints.at(-1);
  }

  /** Stops the runner and the agent (the phone's tunnel with it); nothing of them is left running. */
  async close(): Promise<void> {
    this.closed = true;
    this.info = undefined;
    await Promise.all([this.runner, this.agent].map((child) => (child ? stopGuarded(child, STOP_GRACE_MS) : undefined)));
  }

  private spawn(what: 'tunnel' | 'runner', args: string[]): ChildProcess {
    const child = spawnGuarded(this.options.binary, args, {
      // Any go-ios code path that asks the default agent finds this phone's.
      env: goIosEnv({ USBMUXD_SOCKET_ADDRESS: this.options.usbmuxd, GO_IOS_AGENT_HOST: '127.0.0.1', GO_IOS_AGENT_PORT: String(this.agentPort) }),
      pidFile: join(this.options.pidDir, `${what}-${this.udid}.json`),
      output: 'pipe',
    });
    let partial = '';
    const read = (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        const said = complaint(line);
        if (!said) continue;
        this.complaints.push(said);
        if (this.complaints.length > 20) this.complaints.shift();
      }
    };
    child.stdout!.setEncoding('utf8').on('data', read);
    child.stderr!.setEncoding('utf8').on('data', read);
    child.once('exit', (code, signal) => {
      if (this.closed) return;
      const why = this.lastComplaint() ?? `go-ios ${what} ended (${signal ?? `exit code ${code}`})`;
      this.options.log(`${this.udid}: go-ios ${what === 'tunnel' ? 'tunnel' : 'runwda'} ended: ${why}`);
      this.onExit(what, why);
    });
    return child;
  }
}

class PortInUse extends Error {}

/** An IPv6 address's 16 bytes (go-ios's tunnel addresses are full or ::-shortened, never with an IPv4 tail). */
export function ipv6Bytes(address: string): Buffer {
  const [head, tail] = address.includes('::') ? address.split('::') as [string, string] : [address, undefined];
  const groups = (text: string | undefined) => (text ? text.split(':').filter((g) => g !== '') : []);
  const front = groups(head);
  const back = groups(tail);
  const all = tail === undefined ? front : [...front, ...Array(8 - front.length - back.length).fill('0'), ...back];
  const bytes = Buffer.alloc(16);
  all.forEach((group, i) => bytes.writeUInt16BE(parseInt(group, 16), i * 2));
  return bytes;
}
