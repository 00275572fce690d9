import { EventEmitter } from 'node:events';
import { AndroidFleet } from '../android/android-fleet.js';
import type { Client } from '../android/adb.js';
import type { AdbServerAddress } from '../../../../protocols/adb/host.js';
import { streamClient } from '../android/tunnel-client.js';
import { shellQuote } from '../../domain/shell-quote.js';
import { IosFleet } from '../ios/ios-fleet.js';
import { DEFAULT_WDA_BUNDLE_ID, type WdaLaunchOptions, type XcrunRunner } from '../ios/wda-launcher.js';
import { SshConnection, type SshEndpoint } from '../macos/ssh.js';
import type { Phone, PhoneDriver, PhoneSource } from '../types.js';

/** How to reach one provider: its sshd, the login, and where its adb server and usbmuxd listen on the box itself. */
export interface ProviderSpec {
  id: string;
  name: string;
  endpoint: SshEndpoint;
  /** The pinned host key fingerprint; null pins the first one seen (reported through onHostKey). */
  hostKey: string | null;
  adbPort: number;
  usbmuxdSocket: string;
  paused: boolean;
}

export interface ProviderTiming {
  /** How often the provider's adb server is asked its version (the health check and round-trip time). */
  checkIntervalMs: number;
  /** A check not answered within this is a provider that dropped. */
  probeTimeoutMs: number;
  /** For the SSH handshake, login included. */
  connectTimeoutMs: number;
  /** Reconnect back-off: starts at checkIntervalMs, doubles up to this. */
  backoffMaxMs: number;
}

export const DEFAULT_PROVIDER_TIMING: ProviderTiming = { checkIntervalMs: 2000, probeTimeoutMs: 3000, connectTimeoutMs: 5000, backoffMaxMs: 30_000 };

export interface ProviderHealth {
  state: 'unknown' | 'up' | 'down';
  /** What is wrong, in words, while it is down. */
  message: string | null;
  checkedAt: number | null;
  /** The last check's round trip (a new SSH channel and adb's host:version), in milliseconds. */
  rttMs: number | null;
  /** The provider's adb server's protocol version (41 for platform-tools 29 and later). */
  adbVersion: number | null;
  /** The provider's `uname -s` (Linux, Darwin), read at connect. */
  os: string | null;
  /**
   * Where `xcrun --find devicectl` found devicectl on the provider (a Mac with Xcode 15+), or null: the hub starts WDA
   * on its iOS 17+ iPhones with that devicectl, over SSH; without it they need WDA started by hand.
   */
  devicectl: string | null;
}

/** What the hub lends a provider's iPhones to start WDA with: its go-ios (iOS 17.4+ through a userspace tunnel) and DDI. */
export type ProviderIosLaunch = Pick<WdaLaunchOptions, 'goIos' | 'ddiPath'>;

const UNKNOWN_HEALTH: ProviderHealth = { state: 'unknown', message: null, checkedAt: null, rttMs: null, adbVersion: null, os: null, devicectl: null };

/**
 * The guard command (see connect) also says what the box is: its `uname -s`, and devicectl's path where xcrun finds
 * one. `command -v` first: on Linux there is no xcrun, and a Mac without Xcode has an xcrun that finds no devicectl.
 */
const IDENTIFY = 'uname -s; command -v xcrun >/dev/null 2>&1 && xcrun --find devicectl 2>/dev/null; true';

/** adb servers older than this (platform-tools before 1.0.32) lack what the driver uses (shell v2, stat2). */
const MIN_ADB_VERSION = 32;

function within<T>(promise: PromiseLike<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    Promise.resolve(promise).finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms / 1000} s`)), ms);
    }),
  ]);
}

/** ssh.ts's sentences, prefixed with what they mean to a lab owner looking at a provider. */
function sshProblem(message: string): string {
  if (/authentication failed/.test(message)) return `sshd refused the login (key or password refused): ${message}`;
  if (/host key .* changed/.test(message)) return message;
  if (/private key/.test(message)) return message;
  return `sshd unreachable: ${message}`;
}

export interface ProviderEvents {
  phone: [Phone];
  gone: [string];
  /** Health changed (up, down, or a new message). */
  health: [ProviderHealth];
}

/**
 * One provider: a box with its distribution's adb server on its own loopback, reached over SSH. Its phones are
 * this PhoneSource's; each adb-server connection is a new SSH channel to that loopback port. A check every
 * checkIntervalMs asks the adb server its version through the tunnel: a provider that does not answer is down, its
 * phones go offline (held allocations wait out their grace), and the hub reconnects with back-off.
 */
export class Provider extends EventEmitter<ProviderEvents> implements PhoneSource {
  health: ProviderHealth = UNKNOWN_HEALTH;
  readonly client: Client;
  /** Installs' adb connections: channels on a second SSH connection, opened when the first install comes. */
  private readonly bulkClient: Client;
  private ssh: SshConnection | undefined;
  private bulk: Promise<SshConnection> | undefined;
  private android: AndroidFleet | undefined;
  /** The provider's iPhones, through channels to its usbmuxd socket; it retries quietly where there is no usbmuxd. */
  private ios: IosFleet | undefined;
  private readonly phones = new Map<string, Phone>();
  private stopped = false;
  private begun = false;
  private inFlight: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private backoffMs: number;
  private firstCheck: Promise<void>;
  private settleFirst!: () => void;
  /** What the guard command said about the box at the last connect. */
  private system: Pick<ProviderHealth, 'os' | 'devicectl'> = { os: null, devicectl: null };

  constructor(
    public spec: ProviderSpec,
    private readonly secrets: () => Promise<Pick<SshEndpoint, 'privateKey' | 'passphrase' | 'password'>>,
    private readonly timing: ProviderTiming,
    private readonly log: (message: string) => void,
    private readonly now: () => number,
    private readonly onHostKey: (fingerprint: string) => void,
    /** The WebDriverAgent runner its iPhones' WDA is started from (BENCHTOP_WDA_BUNDLE_ID). */
    private readonly wdaBundleId: string = DEFAULT_WDA_BUNDLE_ID,
    private readonly iosLaunch: ProviderIosLaunch = {},
  ) {
    super();
    this.backoffMs = timing.checkIntervalMs;
    this.firstCheck = new Promise((resolve) => (this.settleFirst = resolve));
    this.client = streamClient(() => this.channel());
    this.bulkClient = streamClient(() => this.bulkChannel());
  }

  /** Starts connecting; resolves once the first check has an answer (up or down). */
  start(): Promise<void> {
    if (!this.begun) {
      this.begun = true;
      void this.cycle();
    }
    return this.firstCheck;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.dropFleets();
    this.ssh?.close();
    this.ssh = undefined;
    this.closeBulk();
    for (const serial of [...this.phones.keys()]) {
      this.phones.delete(serial);
      this.emit('gone', serial);
    }
  }

  /**
   * The lab owner changed it. Pausing only changes what the phones say; answers whether the change needs a new
   * connection (a new address, port, login or pinned key), which the caller asks for with recheck(true).
   */
  update(spec: ProviderSpec): boolean {
    const reconnect = JSON.stringify({ ...spec, paused: 0, hostKey: 0 }) !== JSON.stringify({ ...this.spec, paused: 0, hostKey: 0 })
      || (spec.hostKey !== this.spec.hostKey && spec.hostKey !== this.ssh?.hostKey);
    this.spec = spec;
    for (const [serial, phone] of this.phones) {
      const updated = { ...phone, host: spec.name, paused: spec.paused || undefined };
      this.phones.set(serial, updated);
      this.emit('phone', updated);
    }
    return reconnect;
  }

  /**
   * Checks now and resolves once the check has an answer. `reconnect` first drops the connection (a new address or
   * login), which puts the phones offline until it is back; without it the check runs on the current connection.
   */
  recheck(reconnect = false): Promise<void> {
    if (reconnect) this.down(null);
    this.backoffMs = this.timing.checkIntervalMs;
    clearTimeout(this.timer);
    return this.cycle();
  }

  list(): Phone[] {
    return [...this.phones.values()];
  }

  get(serial: string): Phone | undefined {
    return this.phones.get(serial);
  }

  driver(serial: string): PhoneDriver {
    if (this.phones.get(serial)?.platform === 'ios') return (this.ios ?? this.newIos()).driver(serial);
    return (this.android ?? this.newAndroid()).driver(serial);
  }

  private newAndroid(): AndroidFleet {
    return new AndroidFleet({ host: this.spec.name, port: this.spec.adbPort }, this.log, this.client, this.bulkClient);
  }

  private newIos(): IosFleet {
    // A Mac provider starts WDA on its iOS 17+ iPhones with its own devicectl; elsewhere the hub's go-ios starts it on
    // 17.4+ through a userspace tunnel, given a loopback usbmuxd of that phone relaying here (wda-launcher.ts), and
    // 17.0-17.3 get the manual steps.
    const xcrun = this.system.devicectl ? 'xcrun' : null;
    return new IosFleet({ name: `${this.spec.name}:${this.spec.usbmuxdSocket}`, open: () => this.usbmuxdChannel() }, this.log, {
      bundleId: this.wdaBundleId,
      xcrun,
      runXcrun: this.runXcrun,
      ...this.iosLaunch,
    });
  }

  /**
   * xcrun as an SSH exec on the provider, its report in a temporary directory there: devicectl talks to the phone
   * over CoreDevice, which only the Mac it is plugged into reaches. Its stdout goes to stderr, so that stdout is
   * the report alone.
   */
  private readonly runXcrun: XcrunRunner = async (xcrun, args, timeoutMs) => {
    const ssh = this.ssh;
    if (!ssh) return { failure: `provider ${this.spec.name} is not connected` };
    // The report's path is the shell's to expand; every other word is quoted.
    const report = '"$d/launch.json"';
    const command = [
      'd=$(mktemp -d) || exit 1',
      `${[xcrun, ...args(report)].map((a) => (a === report ? a : shellQuote(a))).join(' ')} >&2`,
      's=$?',
      'cat "$d/launch.json" 2>/dev/null',
      'rm -rf "$d"',
      'exit $s',
    ].join('; ');
    const result = await ssh.exec(command, { timeoutMs }).catch((error: Error) => error);
    if (result instanceof Error) return { failure: `the SSH connection to ${this.spec.name} failed: ${result.message}` };
    if (result.timedOut) return { failure: `${xcrun} did not finish within ${timeoutMs / 1000} s on ${this.spec.name}`, report: result.stdout || undefined };
    const lastLine = result.stderr.trim().split('\n').pop();
    const failure = result.exitCode === 0 ? undefined : result.exitCode === 127 ? `${xcrun} was not found on ${this.spec.name}` : lastLine || `${xcrun} exited with ${String(result.exitCode)}`;
    return { failure, report: result.stdout || undefined };
  };

  /**
   * A channel for a push on the bulk connection. An 8 MiB APK on the main connection would queue ahead of every
   * screen frame and tap behind it in SSH's one TCP stream; on its own connection it only shares the link.
   */
  private bulkChannel() {
    if (!this.ssh) return Promise.reject(new Error(`provider ${this.spec.name} is not connected`));
    const opening = (this.bulk ??= this.secrets().then((secrets) =>
      SshConnection.connect({ ...this.spec.endpoint, ...secrets }, { timeoutMs: this.timing.connectTimeoutMs, expectedHostKey: this.ssh?.hostKey ?? this.spec.hostKey }),
    ).then(async (ssh) => {
      ssh.whenClosed(() => {
        if (this.bulk === opening) this.bulk = undefined;
      });
      // The Nagle guard here too: a push is a string of requests each waiting for its answer (sync's SEND, DONE,
      // then pm install's shell), and each would wait ~40 ms for Nagle on a connection that only forwards.
      await ssh.exec('true', { timeoutMs: this.timing.probeTimeoutMs }).catch(() => undefined);
      return ssh;
    }));
    opening.catch(() => {
      if (this.bulk === opening) this.bulk = undefined;
    });
    return opening.then((ssh) => ssh.forwardOut('127.0.0.1', this.spec.adbPort));
  }

  private closeBulk(): void {
    const bulk = this.bulk;
    this.bulk = undefined;
    void bulk?.then((ssh) => ssh.destroy(), () => undefined);
  }

  /** A new channel to the provider's usbmuxd socket (OpenSSH streamlocal forwarding). */
  private usbmuxdChannel() {
    if (!this.ssh) return Promise.reject(new Error(`provider ${this.spec.name} is not connected`));
    return this.ssh.forwardOutUnix(this.spec.usbmuxdSocket);
  }

  /** The provider's adb server, reached through a channel of the SSH connection: what a held phone's remote-connect bridge forwards to. */
  adbServer(): AdbServerAddress {
    return { name: `provider ${this.spec.name}'s adb server`, open: () => this.channel() };
  }

  /** A new channel to the provider's adb server, on the one SSH connection. */
  private channel() {
    if (!this.ssh) return Promise.reject(new Error(`provider ${this.spec.name} is ${this.health.state === 'down' ? 'down' : 'not connected'}`));
    return this.ssh.forwardOut('127.0.0.1', this.spec.adbPort);
  }

  /** One connect-and-check at a time: a recheck while the timer's cycle runs waits for that one. */
  private cycle(): Promise<void> {
    this.inFlight ??= this.connectAndCheck().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async connectAndCheck(): Promise<void> {
    if (this.stopped) return;
    try {
      if (!this.ssh) await this.connect();
      await this.check();
      this.backoffMs = this.timing.checkIntervalMs;
      this.schedule(this.timing.checkIntervalMs);
    } catch (error) {
      this.down((error as Error).message);
      this.schedule(this.backoffMs);
      this.backoffMs = Math.min(this.backoffMs * 2, this.timing.backoffMaxMs);
    } finally {
      this.settleFirst();
    }
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.cycle(), ms);
    this.timer.unref();
  }

  private async connect(): Promise<void> {
    const secrets = await this.secrets();
    let ssh: SshConnection;
    try {
      ssh = await SshConnection.connect(
        { ...this.spec.endpoint, ...secrets },
        // Keepalives end a dead connection at about the same time the check would notice it.
        { timeoutMs: this.timing.connectTimeoutMs, expectedHostKey: this.spec.hostKey, keepaliveMs: Math.max(1000, this.timing.checkIntervalMs) },
      );
    } catch (error) {
      throw new Error(sshProblem((error as Error).message), { cause: error });
    }
    if (this.stopped) return ssh.close();
    // OpenSSH before 10.1 sets TCP_NODELAY only once a session channel has run: on a connection that only forwards,
    // Nagle adds ~40 ms to every adb request. One exec first brings an adb shell round trip from ~48 ms to ~4 ms.
    const guard = await ssh.exec(IDENTIFY, { timeoutMs: this.timing.probeTimeoutMs }).catch((error: Error) => error);
    if (guard instanceof Error) {
      ssh.close();
      throw new Error(`sshd accepted the login but could not run a command: ${guard.message}`);
    }
    const [os, devicectl] = guard.stdout.split('\n').map((line) => line.trim());
    this.system = { os: os || null, devicectl: devicectl?.startsWith('/') ? devicectl : null };
    if (!this.spec.hostKey) this.onHostKey(ssh.hostKey);
    this.ssh = ssh;
    ssh.whenClosed(() => {
      if (this.ssh !== ssh) return;
      this.down('the SSH connection to the provider was lost');
      this.schedule(this.backoffMs);
    });
  }

  /** Asks the adb server its version through a new channel: the health check, and the round trip it took. */
  private async check(): Promise<void> {
    const started = performance.now();
    let version: number;
    try {
      version = await within(this.client.version(), this.timing.probeTimeoutMs, `the adb server on the provider's 127.0.0.1:${this.spec.adbPort}`);
    } catch (error) {
      const message = (error as Error).message;
      const why = /did not answer/.test(message) ? message : `no adb server answering on the provider's 127.0.0.1:${this.spec.adbPort} (${message})`;
      // The link itself may be dead: a fresh connection next time, not a channel on a connection that hangs.
      this.ssh?.destroy();
      this.ssh = undefined;
      throw new Error(why, { cause: error });
    }
    if (version < MIN_ADB_VERSION) {
      throw new Error(`the provider's adb server speaks protocol ${version}; Benchtop needs ${MIN_ADB_VERSION} or later (platform-tools 1.0.32+)`);
    }
    this.health = { state: 'up', message: null, checkedAt: this.now(), rttMs: performance.now() - started, adbVersion: version, ...this.system };
    this.emit('health', this.health);
    if (!this.android) await this.startFleets();
  }

  /** The provider's Android and iOS fleets, each reporting its phones as this provider's. */
  private async startFleets(): Promise<void> {
    const android = this.newAndroid();
    const ios = this.newIos();
    this.android = android;
    this.ios = ios;
    const current = () => this.android === android;
    for (const part of [android, ios] as const) {
      part.on('phone', (phone: Phone) => {
        if (!current()) return;
        const own = { ...phone, host: this.spec.name, ...(this.spec.paused ? { paused: true } : {}) };
        this.phones.set(phone.serial, own);
        this.emit('phone', own);
      });
      part.on('gone', (serial: string) => {
        if (!current() || !this.phones.delete(serial)) return;
        this.emit('gone', serial);
      });
    }
    await Promise.all([android.start(), ios.start()]);
    if (!current()) return;
    // Phones that were offline while the provider was away and are not attached now are gone.
    const now = new Set([...android.list(), ...ios.list()].map((p) => p.serial));
    for (const serial of [...this.phones.keys()]) {
      if (!now.has(serial)) {
        this.phones.delete(serial);
        this.emit('gone', serial);
      }
    }
  }

  private async dropFleets(): Promise<void> {
    const parts = [this.android, this.ios];
    this.android = undefined;
    this.ios = undefined;
    for (const part of parts) part?.removeAllListeners();
    await Promise.all(parts.map((part) => part?.stop()));
  }

  /** Down (or reconnecting, with no message): every phone offline until the provider answers again. */
  private down(message: string | null): void {
    const ssh = this.ssh;
    this.ssh = undefined;
    // Destroyed, not ended: on a dead link an orderly close never completes, and what waits on the connection (a
    // channel being opened, a minicap's kill) would wait with it.
    ssh?.destroy();
    this.closeBulk();
    void this.dropFleets();
    if (message !== null) {
      if (this.health.state !== 'down' || this.health.message !== message) this.log(`provider ${this.spec.name}: ${message}`);
      this.health = { ...UNKNOWN_HEALTH, state: 'down', message, checkedAt: this.now() };
      this.emit('health', this.health);
    }
    for (const [serial, phone] of this.phones) {
      if (phone.state === 'offline') continue;
      const offline: Phone = { ...phone, state: 'offline' };
      this.phones.set(serial, offline);
      this.emit('phone', offline);
    }
  }
}
