import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type Server, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { androidCommands } from './android-commands.js';
import { readApkInfo, type ApkInfo } from './apk.js';
import { contentCommand } from './content.js';
import { Device, type DeviceOptions } from './device.js';
import { amInstrument, type PortListener } from './instrumentation.js';
import { appProcess, executableLoader, type AbstractListener, type MinicapHost } from './minicap.js';
import { appUser, ProcessTable } from './processes.js';
import { Screen } from './screen.js';
import { BufferSink, Shell, type CommandFn, type Sink } from './shell.js';
import { openShellV2 } from './shell-v2.js';
import { ptyShell } from './pty-shell.js';
import { screenrecord } from './screenrecord.js';
import { openSyncService } from './sync-service.js';
import { toolbox } from './toolbox.js';
import { DeviceConnection, type ServiceSession, type StreamIo } from '../../protocols/adb/transport.js';

export interface SimulatedPhoneOptions {
  model?: string;
  manufacturer?: string;
  brand?: string;
  /** ro.product.name, shown as `product:` by `adb devices -l`. */
  productName?: string;
  /** ro.product.device, shown as `device:` by `adb devices -l`. */
  deviceName?: string;
  osVersion?: string;
  sdk?: number;
  /** ro.serialno. The adb serial of a TCP device is its address, `127.0.0.1:<port>`. */
  serialNo?: string;
  /** More system properties, as a maker's build sets them (a Xiaomi's ro.product.marketname, "Redmi Note 12"). */
  properties?: Record<string, string>;
  /** Battery level in percent. */
  battery?: number;
  /** Physical (portrait) display size in pixels. */
  width?: number;
  height?: number;
  density?: number;
  /** ro.product.cpu.abi (arm64-v8a by default): decides which minicap build runs. */
  abi?: DeviceOptions['abi'];
  /** Display refresh rate in Hz (60 by default): minicap sends at most this many frames per second. */
  refreshRate?: number;
  /** False: minicap cannot capture this display (as on emulators and some vendor builds) and exits with an error. */
  minicap?: boolean;
  /**
   * True: a native process started from a shell (minicap) keeps running when that shell's adb stream closes, as on
   * phones whose adbd does not hang up the process group; only a kill ends it.
   */
  keepsProcessesOnHangup?: boolean;
  /** How long `pm install` takes, as a real package manager's dexopt does; immediate by default. */
  installMs?: number;
  /**
   * How fast the phone takes in what the host sends, as a real phone's USB link limits it (AOSP measured `adb push`
   * at 125 MB/s on a Pixel 3 over USB 3.0, 36 MB/s over USB 2.0); unset: as fast as memory allows, several times any
   * phone. For benchmarks of pushes and installs at a real phone's rate.
   */
  usbReadBytesPerSecond?: number;
  /** Receives one line per transport event (services opened, protocol errors); for debugging. */
  log?: (line: string) => void;
  /**
   * True: the phone starts with the UiAutomator2 server's two packages installed, as a phone that has had a session
   * before: a real lab phone keeps them from its first Appium session on, and only that first session installs them
   * (6-30 s). Installed from the very APKs the lab's Appium driver installs (its own appium-uiautomator2-server), so
   * the versions Appium compares are the same and it skips the install. A test fixture choice: the lab does nothing
   * different for such a phone.
   */
  uiautomator2ServerInstalled?: boolean;
}

export interface PhoneState {
  listening: boolean;
  port: number | undefined;
  /** Open transports (adb servers connected to this phone). */
  connections: number;
  awake: boolean;
  locked: boolean;
  /** What is on the display right now. */
  screen: 'off' | 'lockscreen' | 'home' | 'recents' | 'app';
  /** The resumed app, which may sit behind the keyguard. */
  foregroundPackage: string | undefined;
  foregroundActivity: string | undefined;
  rotation: 0 | 1 | 2 | 3;
  /** Display size in the current orientation. */
  width: number;
  height: number;
  battery: number;
  volume: number;
  wifi: boolean;
  bluetooth: boolean;
  lastTap: { x: number; y: number } | undefined;
  lastLongPress: { x: number; y: number } | undefined;
  lastSwipe: { x1: number; y1: number; x2: number; y2: number; durationMs: number } | undefined;
  packages: string[];
  thirdPartyPackages: string[];
  /** Package names of the recent tasks, most recent first. */
  recents: string[];
  notesText: string;
  /** What the phone's clipboard holds. */
  clipboard: string;
  browserUrl: string;
  settingsPage: string;
  inputMethod: string | undefined;
  /** The last services the host opened (`shell:...`, `sync:`, ...), oldest first. */
  recentServices: string[];
}

/**
 * adbd's feature list minus cmd and abb, so clients install with push + `pm install`. shell_v2 is offered: adb then
 * opens `shell,v2,...` streams and exits with the command's status, as on a real phone.
 */
export const DEVICE_FEATURES = ['shell_v2', 'stat_v2', 'ls_v2', 'fixed_push_mkdir', 'fixed_push_symlink_timestamp'];

/** The UiAutomator2 server's APKs (server, then its test package), read once per process: 18 MB, 160 ms to read. */
let serverApks: Array<{ bytes: Buffer; info: ApkInfo }> | undefined;

/** The APKs the lab's Appium installs: appium-uiautomator2-server as its UiAutomator2 driver resolves it. */
function uiautomator2ServerApks(): Array<{ bytes: Buffer; info: ApkInfo }> {
  if (serverApks) return serverApks;
  const driver = createRequire(import.meta.url).resolve('appium-uiautomator2-driver/package.json');
  const serverPackage = createRequire(driver).resolve('appium-uiautomator2-server/package.json');
  const { version } = JSON.parse(readFileSync(serverPackage, 'utf8')) as { version: string };
  // The file names appium-uiautomator2-server's index.mjs gives as SERVER_APK_PATH and TEST_APK_PATH.
  const apks = join(dirname(serverPackage), 'apks');
  serverApks = [`appium-uiautomator2-server-v${version}.apk`, 'appium-uiautomator2-server-debug-androidTest.apk'].map((name) => {
    const bytes = readFileSync(join(apks, name));
    return { bytes, info: readApkInfo(bytes) };
  });
  return serverApks;
}

/** How long a simulated reboot keeps adbd away: under adb's first redial, 250 ms after the drop. */
const REBOOT_MS = 100;

/** How often BatteryService and friends log on their own. */
const SYSTEM_LOG_MS = 5000;

/** adb treats 5555-5585 as emulator console pairs and renames such devices `emulator-N`. */
const EMULATOR_PORTS = { first: 5555, last: 5585 };

/**
 * A simulated Android phone that speaks the device side of the ADB protocol on a loopback TCP port,
 * so the real adb server can `adb connect` to it like to a phone in wireless debugging.
 */
export class SimulatedPhone {
  private readonly device: Device;
  private readonly screen: Screen;
  private readonly shellInterpreter: Shell;
  private readonly log?: (line: string) => void;
  private server: Server | undefined;
  private boundPort: number | undefined;
  private readonly sockets = new Set<Socket>();
  private wedged = false;
  private readonly connections = new Set<DeviceConnection>();
  private readonly services: string[] = [];
  /** A reboot is under way: adbd comes back unless the phone is stopped meanwhile. */
  private rebooting = false;
  private readonly processes: ProcessTable;
  private readonly usbReadBytesPerSecond: number | undefined;
  private systemLog: NodeJS.Timeout | undefined;
  /** Listening sockets in the abstract namespace, reached through `localabstract:<name>`. */
  private readonly abstractSockets = new Map<string, AbstractListener>();
  /** Listening TCP ports, reached through `tcp:<port>` (what `adb forward tcp:N tcp:<port>` opens). */
  private readonly tcpPorts = new Map<number, PortListener>();

  constructor(options: SimulatedPhoneOptions = {}) {
    this.processes = new ProcessTable(options.keepsProcessesOnHangup ?? false);
    this.usbReadBytesPerSecond = options.usbReadBytesPerSecond;
    const model = options.model ?? 'Benchtop Sim';
    const deviceName = options.deviceName ?? 'benchsim';
    const opts: DeviceOptions = {
      model,
      manufacturer: options.manufacturer ?? 'Benchtop',
      brand: options.brand ?? (options.manufacturer ?? 'benchtop').toLowerCase(),
      productName: options.productName ?? deviceName,
      deviceName,
      osVersion: options.osVersion ?? '13',
      sdk: options.sdk ?? 33,
      serialNo: options.serialNo ?? `SIM${randomBytes(5).toString('hex').toUpperCase()}`,
      battery: Math.max(0, Math.min(100, Math.round(options.battery ?? 85))),
      width: options.width ?? 720,
      height: options.height ?? 1280,
      density: options.density ?? 320,
      installMs: options.installMs ?? 0,
      abi: options.abi ?? 'arm64-v8a',
      refreshRate: options.refreshRate ?? 60,
      minicapCapture: options.minicap ?? true,
      properties: options.properties,
    };
    this.log = options.log;
    this.device = new Device(opts);
    if (options.uiautomator2ServerInstalled) {
      for (const apk of uiautomator2ServerApks()) {
        const installed = this.device.installParsed(apk.bytes, apk.info);
        if (!installed.ok) throw new Error(`the UiAutomator2 server could not be installed: ${installed.message}`);
      }
    }
    this.screen = new Screen(this.device);
    const commands = toolbox(() => commands.keys());
    const instrument = amInstrument({ device: this.device, screen: this.screen, processes: this.processes, ports: this.tcpPorts });
    for (const [name, fn] of androidCommands(this.device, this.screen, { processes: this.processes, instrument })) commands.set(name, fn);
    // A force-stop kills every process the package has loaded in, with what runs there.
    this.device.stopListeners.add((packageName) => this.processes.killPackage(packageName));
    commands.set('content', contentCommand(this.device));
    commands.set('reboot', () => {
      this.reboot();
      return 0;
    });
    const host: MinicapHost = { device: this.device, screen: this.screen, processes: this.processes, sockets: this.abstractSockets };
    // What Appium reads to find webviews' devtools sockets: the system's sockets and whatever listens now (minicap).
    this.device.fs.provide('/proc/net/unix', () => procNetUnix(this.abstractSockets.keys()));
    commands.set('app_process', appProcess(host));
    commands.set('screenrecord', screenrecord(host));
    processCommands(commands, this.processes, this.device);
    this.shellInterpreter = new Shell(this.device.fs, commands, {
      PATH: '/product/bin:/apex/com.android.runtime/bin:/apex/com.android.art/bin:/system_ext/bin:/system/bin:/system/xbin:/odm/bin:/vendor/bin:/vendor/xbin',
      HOME: '/',
      USER: 'shell',
      HOSTNAME: opts.deviceName,
      EXTERNAL_STORAGE: '/sdcard',
      ANDROID_DATA: '/data',
      ANDROID_ROOT: '/system',
      TMPDIR: '/data/local/tmp',
    }, executableLoader(host));
  }

  /** Listens on 127.0.0.1 and resolves to the port. Starting a stopped phone again is a replug. */
  async start(port = 0): Promise<number> {
    if (this.server) throw new Error('the simulated phone is already listening');
    if (port >= EMULATOR_PORTS.first && port <= EMULATOR_PORTS.last) {
      throw new RangeError(`port ${port} is in adb's emulator range ${EMULATOR_PORTS.first}-${EMULATOR_PORTS.last}`);
    }
    for (;;) {
      const server = createServer((socket) => this.accept(socket));
      const bound = await new Promise<number>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ port, host: '127.0.0.1' }, () => {
          server.off('error', reject);
          resolve((server.address() as { port: number }).port);
        });
      });
      if (port === 0 && bound >= EMULATOR_PORTS.first && bound <= EMULATOR_PORTS.last) {
        await new Promise<void>((resolve) => server.close(() => resolve()));
        continue;
      }
      this.server = server;
      this.boundPort = bound;
      // The system's own periodic lines, as a phone's log is never silent for long.
      this.systemLog = setInterval(() => {
        const d = this.device;
        d.log.append('D', 'BatteryService', `level:${d.battery} scale:100 plugged:${d.plugged ? 2 : 0} status:${d.plugged ? 2 : 3} temp:${285 + (d.rev % 7)}`);
      }, SYSTEM_LOG_MS);
      this.systemLog.unref();
      return bound;
    }
  }

  /**
   * Unplugs the phone: stops listening and drops every transport. Its state (apps, files, screen) stays.
   * adb 1.0.41 marks the device offline at once and redials it by itself, about 250 ms after the drop and then
   * every 10 s; after about a minute of refusals it forgets the device, and only `adb connect` brings it back.
   */
  async stop(): Promise<void> {
    this.rebooting = false;
    await this.drop();
  }

  /** Stops listening and drops every transport. */
  private async drop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    clearInterval(this.systemLog);
    for (const conn of this.connections) conn.close();
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  get port(): number | undefined {
    return this.boundPort;
  }

  /** The serial adb gives this phone once connected. */
  get adbSerial(): string | undefined {
    return this.boundPort === undefined ? undefined : `127.0.0.1:${this.boundPort}`;
  }

  /**
   * adbd stops answering and keeps its connections open: what the adb server sees of a phone whose USB link went bad.
   * It stays listed as a device, and whatever is asked of it waits. `false` lets it answer again, and what waited
   * goes on.
   */
  wedge(on = true): void {
    this.wedged = on;
    for (const socket of this.sockets) {
      if (on) socket.pause();
      else socket.resume();
    }
  }

  /** ro.serialno */
  get serialNo(): string {
    return this.device.options.serialNo;
  }

  get state(): PhoneState {
    const d = this.device;
    const top = d.foreground;
    const { width, height } = d.logicalSize;
    return {
      listening: this.server !== undefined,
      port: this.boundPort,
      connections: this.connections.size,
      awake: d.awake,
      locked: d.locked,
      screen: !d.awake ? 'off' : d.locked ? 'lockscreen' : d.screen,
      foregroundPackage: top?.packageName,
      foregroundActivity: top?.activity,
      rotation: d.rotation,
      width,
      height,
      battery: d.battery,
      volume: d.volume,
      wifi: d.wifi,
      bluetooth: d.bluetooth,
      lastTap: d.lastTap && { ...d.lastTap },
      lastLongPress: d.lastLongPress && { ...d.lastLongPress },
      lastSwipe: d.lastSwipe && { ...d.lastSwipe },
      packages: [...d.apps.keys()],
      thirdPartyPackages: [...d.apps.values()].filter((a) => !a.system).map((a) => a.packageName),
      recents: d.tasks.map((t) => t.packageName),
      notesText: d.notes.text,
      clipboard: d.clipboard,
      browserUrl: d.browser.url,
      settingsPage: d.settingsPage,
      inputMethod: d.settings.secure.get('default_input_method'),
      recentServices: [...this.services],
    };
  }

  /** Runs a command on the phone's shell without going through adb (demo mode and direct checks). */
  async shell(command: string): Promise<{ output: Buffer; status: number }> {
    const sink = new BufferSink();
    const status = await this.shellInterpreter.run(command, { stdout: sink });
    return { output: sink.contents(), status };
  }

  /** The current screen as PNG, the same bytes `screencap -p` returns. */
  screenshot(): Buffer {
    return this.screen.png();
  }

  setBattery(level: number): void {
    this.device.battery = Math.max(0, Math.min(100, Math.round(level)));
    this.device.changed();
  }

  readFile(path: string): Buffer | undefined {
    try {
      return this.device.fs.readFile(path);
    } catch {
      return undefined;
    }
  }

  private banner(): string {
    const o = this.device.options;
    return `device::ro.product.name=${o.productName};ro.product.model=${o.model};ro.product.device=${o.deviceName};features=${DEVICE_FEATURES.join(',')}`;
  }

  private accept(socket: Socket): void {
    this.sockets.add(socket);
    if (this.wedged) socket.pause();
    const conn = new DeviceConnection(socket, {
      banner: () => this.banner(),
      openService: (service, io) => this.openService(service, io),
      log: this.log,
    });
    if (this.usbReadBytesPerSecond) throttleReads(socket, this.usbReadBytesPerSecond);
    this.connections.add(conn);
    socket.on('close', () => {
      this.sockets.delete(socket);
      this.connections.delete(conn);
    });
  }

  private openService(service: string, io: StreamIo): ServiceSession | undefined {
    this.services.push(service);
    if (this.services.length > 50) this.services.shift();
    const colon = service.indexOf(':');
    const name = colon < 0 ? service : service.slice(0, colon);
    const arg = colon < 0 ? '' : service.slice(colon + 1);
    const say = (text: string): ServiceSession => {
      void io.write(text).then(() => io.end());
      return {};
    };
    // `shell,v2,raw:cmd`: the service's options come before the colon.
    const [base, ...flags] = name.split(',');
    switch (base) {
      case 'shell':
        if (flags.includes('v2')) {
          return openShellV2(io, arg, {
            run: (command, streams) => this.shellInterpreter.run(command, streams),
            // adbd sets TERM from the client's request (`shell,v2,TERM=xterm-256color,pty:`).
            interactive: (framed) => this.interactiveShell(framed, Object.fromEntries(flags.filter((f) => f.startsWith('TERM=')).map((f) => ['TERM', f.slice(5)]))),
          }, flags.includes('pty'));
        }
        // The v1 shell runs its command behind a PTY, as adbd does (which is why adb has -T).
        return arg === '' ? this.interactiveShell(io) : this.runCommand(arg, io, true);
      case 'exec':
        return this.runCommand(arg, io);
      case 'sync':
        return openSyncService(io, this.device.fs);
      case 'framebuffer':
        return this.framebuffer(io);
      case 'reboot':
        this.reboot();
        return say('');
      case 'localabstract':
        // Nothing listening: adbd fails the open, and the host sees its stream closed.
        return this.abstractSockets.get(arg)?.(io);
      case 'tcp':
        // `tcp:<port>` or `tcp:<port>:<host>`; a refused connection fails the open, as above.
        return /^\d+(:localhost|:127\.0\.0\.1)?$/.test(arg) ? this.tcpPorts.get(Number(arg.split(':')[0]))?.(io) : undefined;
      case 'root':
        return say('adbd cannot run as root in production builds\n');
      case 'unroot':
        return say('adbd not running as root\n');
      case 'remount':
        return say('Not running as root. Try "adb root" first.\n');
      default:
        return undefined;
    }
  }

  /**
   * Restarts the phone: every transport drops (adb sees it go offline), adbd listens again on the same port a moment
   * later and adb's redial brings it back. Like a real phone, it comes back on the lock screen with no app open.
   */
  private reboot(): void {
    const port = this.boundPort;
    this.rebooting = true;
    void (async () => {
      // Let the reboot command's own stream finish first.
      await delay(20);
      await this.drop();
      for (const p of this.processes.list()) this.processes.kill(p.pid);
      this.device.tasks = [];
      this.device.screen = 'home';
      this.device.locked = true;
      this.device.changed();
      await delay(REBOOT_MS);
      if (!this.rebooting || port === undefined) return;
      this.rebooting = false;
      await this.start(port).catch((error: Error) => this.log?.(`reboot: listening again failed: ${error.message}`));
    })();
  }

  private runCommand(command: string, io: StreamIo, pty = false): ServiceSession {
    const stdout: Sink = { write: (data) => io.write(data) };
    const interrupt = new AbortController();
    void (async () => {
      try {
        await this.shellInterpreter.run(command, { stdout, signal: AbortSignal.any([io.signal, interrupt.signal]) });
      } catch (err) {
        this.log?.(`shell command ${JSON.stringify(command)} threw: ${(err as Error).stack ?? err}`);
      }
      await io.end();
    })();
    // Shell v1 has no way to signal stdin EOF, and no command here reads it: input is dropped, but for the PTY's
    // Ctrl+C, which interrupts the command.
    return pty ? { onData: (data) => void (data.includes(0x03) && interrupt.abort()) } : {};
  }

  /** `adb shell` with no command: the interactive shell behind a PTY. */
  private interactiveShell(io: StreamIo, env: Record<string, string> = {}): ServiceSession {
    return ptyShell(io, this.shellInterpreter, this.device.options.deviceName, env);
  }

  /** The legacy `framebuffer:` service: a 52-byte fb_info header (version 1, RGBA 8888), then the pixels. */
  private framebuffer(io: StreamIo): ServiceSession {
    const canvas = this.screen.canvas();
    const header = Buffer.alloc(52);
    const fields = [1, 32, canvas.data.length, canvas.width, canvas.height, 0, 8, 16, 8, 8, 8, 24, 8];
    fields.forEach((v, i) => header.writeUInt32LE(v, i * 4));
    void io.write(Buffer.concat([header, canvas.data])).then(() => io.end());
    return {};
  }
}

/**
 * /proc/net/unix: the phone's listening Unix sockets (flags 00010000, state 01), the system's own and each abstract
 * one a process listens on now. No app here embeds a WebView or runs Chrome's devtools, so none is a devtools socket.
 */
function procNetUnix(abstract: Iterable<string>): Buffer {
  const system = ['/dev/socket/logdw', '/dev/socket/logdr', '/dev/socket/logd', '/dev/socket/zygote', '/dev/socket/usap_pool_primary', '/dev/socket/property_service', '/dev/socket/adbd', '@jdwp-control'];
  const lines = [...system, ...[...abstract].map((name) => `@${name}`)].map(
    (path, i) => `0000000000000000: 00000002 00000000 00010000 0001 01 ${20000 + i} ${path}`,
  );
  return Buffer.from(`Num       RefCount Protocol Flags    Type St Inode Path\n${lines.join('\n')}\n`);
}

/** toybox's `ps --help`, which appium-adb reads to learn whether `-A` lists every user's processes. */
const PS_HELP =
  'usage: ps [-AadefLlnwZ] [-gG GROUP,] [-k FIELD,] [-o FIELD,] [-p PID,] [-t TTY,] [-uU USER,]\n\nList processes.\n\n' +
  'Which processes to show (-gGuUpPt selections may be comma separated lists):\n\n' +
  '-A\tAll\t\t\t\t\t-a\tHas terminal not session leader\n-d\tAll but session leaders\t\t\t-e\tSynonym for -A\n' +
  '-g\tIn GROUPs\t\t\t\t-G\tIn real GROUPs (before sgid)\n-p\tPIDs (--pid)\t\t\t\t-P\tParent PIDs (--ppid)\n' +
  '-s\tIn session IDs\t\t\t\t-t\tAttached to selected TTYs\n-T\tShow threads also\t\t\t-u\tOwned by selected USERs\n' +
  '-U\tReal USERs (before suid)\n\nOutput modifiers:\n\n-k\tSort FIELDs (-FIELD to reverse)\t\t-M\tMeasure/pad future field widths\n' +
  '-n\tShow numeric USER and GROUP\t\t-w\tWide output (don\'t truncate fields)\n';

const PS_FIELDS = ['USER', 'PID', 'PPID', 'NAME'] as const;
type PsField = (typeof PS_FIELDS)[number];

/** The columns `-o` asks for (it may repeat, and takes comma-separated fields), undefined for the default; an unknown field is toybox's complaint. */
function psFields(args: readonly string[]): PsField[] | string | undefined {
  const asked: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-o') asked.push(...(args[++i] ?? '').split(','));
    else if (a.startsWith('-o')) asked.push(...a.slice(2).split(','));
  }
  if (asked.length === 0) return undefined;
  const unknown = asked.find((f) => !(PS_FIELDS as readonly string[]).includes(f.toUpperCase()));
  if (unknown !== undefined) return `bad -o ${unknown}`;
  return asked.map((f) => f.toUpperCase() as PsField);
}

/** `ps`, `pidof` and `kill` over the apps' processes and the native ones (minicap) started from the shell. */
function processCommands(commands: Map<string, CommandFn>, processes: ProcessTable, device: Device): void {
  const appPidof = commands.get('pidof');
  commands.set('pidof', async (ctx) => {
    const native = ctx.args.flatMap((name) => processes.byName(name).map((p) => p.pid));
    if (native.length === 0 && appPidof) return appPidof(ctx);
    if (native.length === 0) return 1;
    await ctx.stdout.write(native.join(' ') + '\n');
    return 0;
  });
  commands.set('ps', async (ctx) => {
    if (ctx.args.includes('--help')) {
      await ctx.stdout.write(PS_HELP);
      return 0;
    }
    const rows = [
      ...[...device.pids].map(([name, pid]) => ({ user: appUser(device.apps.get(name)?.uid ?? 10000), pid, name })),
      ...processes.list().map((p) => ({ user: p.user, pid: p.pid, name: p.name })),
    ];
    const fields = psFields(ctx.args);
    if (typeof fields === 'string') {
      await ctx.stderr.write(`ps: ${fields}\n`);
      return 1;
    }
    if (fields) {
      const cell = (field: PsField, row: { user: string; pid: number; name: string }) =>
        field === 'USER' ? row.user.padEnd(10) : field === 'PID' ? String(row.pid).padStart(5) : field === 'PPID' ? '1'.padStart(5) : row.name;
      const header = fields.map((f) => (f === 'USER' ? f.padEnd(10) : f === 'NAME' ? f : f.padStart(5))).join(' ');
      await ctx.stdout.write([header, ...rows.map((r) => fields.map((f) => cell(f, r)).join(' '))].join('\n') + '\n');
      return 0;
    }
    const line = (user: string, pid: string, name: string) => `${user.padEnd(10)} ${pid.padStart(5)}   ${'1'.padStart(5)} 0 0 0 0 S ${name}\n`;
    await ctx.stdout.write(`USER         PID  PPID VSZ RSS WCHAN ADDR S NAME\n` + rows.map((r) => line(r.user, String(r.pid), r.name)).join(''));
    return 0;
  });
  commands.set('kill', async (ctx) => {
    let status = 0;
    const signal = ctx.args.some((a) => a === '-9' || a === '-KILL' || a === '-SIGKILL' || a === '-s9') ? 'SIGKILL' : 'SIGTERM';
    for (const arg of ctx.args) {
      if (arg.startsWith('-')) continue;
      if (!processes.kill(Number(arg), signal)) {
        await ctx.stderr.write(`/system/bin/sh: kill: ${arg}: No such process\n`);
        status = 1;
      }
    }
    return status;
  });
}

/**
 * Reads from `socket` no faster than `bytesPerSecond`: once the bytes read so far would still be on the wire at that
 * rate, reading waits until they would not be. A sender then waits on TCP's flow control, as on a USB link's.
 */
function throttleReads(socket: Socket, bytesPerSecond: number): void {
  let wireFreeAt = 0;
  socket.on('data', (chunk: Buffer) => {
    const now = performance.now();
    wireFreeAt = Math.max(now, wireFreeAt) + (chunk.length / bytesPerSecond) * 1000;
    const ahead = wireFreeAt - now;
    // Below a millisecond, a timer would cost more than it models.
    if (ahead < 1) return;
    socket.pause();
    setTimeout(() => socket.resume(), ahead);
  });
}
