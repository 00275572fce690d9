import { createPublicKey, randomBytes, randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';
import { MediaFs, AFC_SERVICE, newDataContainer, serveAfc } from './afc.js';
import { INSTALLATION_PROXY_SERVICE, serveInstallationProxy, type InstalledApp } from './installation-proxy.js';
import { DIAGNOSTICS_RELAY_SERVICE, serveDiagnosticsRelay } from './diagnostics-relay.js';
import { IMAGE_MOUNTER_SERVICE, ImageMounterState, serveImageMounter } from './image-mounter.js';
import { LOCKDOWN_PORT, serveLockdown } from './lockdownd.js';
import { createPairing, pairRecordOf, type Pairing } from '../../protocols/apple/pairing.js';
import { Springboard, SYSTEM_APPS } from './springboard.js';
import {
  HOUSE_ARREST_SERVICE, INSTRUMENTS_SECURE_SERVICE, INSTRUMENTS_SERVICE, TESTMANAGERD_SECURE_SERVICE, TESTMANAGERD_SERVICE, TestManager,
} from './test-manager.js';
import type { SimulatedUsbmuxd, UsbmuxDevice } from './usbmuxd.js';
import { MJPEG_PORT, WDA_BUNDLE_ID, WDA_PORT, WebDriverAgent } from './wda.js';
import { serveWebInspector, WEB_INSPECTOR_SERVICE } from './web-inspector.js';
import { CORE_DEVICE_PROXY_SERVICE, CoreDeviceTunnel, type TunnelServices } from './tunnel/core-device-proxy.js';

export const SYSLOG_SERVICE = 'com.apple.syslog_relay';

export interface SimulatedIPhoneOptions {
  /** The name the owner gave it (Settings > General > About > Name). */
  name?: string;
  /** Apple's model identifier: iPhone14,6 is the iPhone SE (3rd generation), whose 375x667-point screen this draws. */
  productType?: string;
  version?: string;
  buildVersion?: string;
  udid?: string;
  battery?: number;
  /** Whether it trusts the host: false shows the "Trust This Computer?" alert, with no pair record on the host. */
  trusted?: boolean;
  /**
   * Whether WebDriverAgent is running on it (on a real phone: an XCUITest runner started by xcodebuild, devicectl or
   * a tunnel tool). Default: before iOS 17, yes (a host started it over lockdown); from 17 on, no: it answers only once
   * something launches it through CoreDevice (a Mac's devicectl, or RSD's testmanagerd in a 17.4+ tunnel).
   */
  wda?: boolean;
  /** Whether WebDriverAgent's runner is installed (developer-signed, bundle id `wdaBundleId`); default true. */
  wdaInstalled?: boolean;
  /** The runner's bundle id; default com.facebook.WebDriverAgentRunner.xctrunner. */
  wdaBundleId?: string;
  /**
   * Whether the Developer Disk Image is mounted: without it lockdown (before iOS 17) or RSD (17.4+) offers no
   * testmanagerd or instruments. Xcode mounts it when it first sees the phone, a host can through
   * mobile_image_mounter (image-mounter.ts); it stays mounted until the phone restarts. Default true.
   */
  developerImage?: boolean;
  /** How long a restart (diagnostics_relay's Restart) keeps it off the bus; a real phone takes 30 s to 2 min. Default 1500. */
  restartMs?: number;
  /** Apps someone installed before (App Store builds), each with its data container and these files in its Documents. */
  userApps?: Array<{ bundleId: string; name: string; version?: string; fileSharing?: boolean; documents?: Record<string, string> }>;
}

/** The library and pid iOS shows in syslog for the processes this phone logs as; others get a stable made-up pid. */
const SYSLOG_SOURCES: Record<string, [string | undefined, number]> = {
  kernel: [undefined, 0],
  SpringBoard: ['FrontBoard', 58],
  testmanagerd: [undefined, 211],
};

/** A UDID as phones since the iPhone XS have it: 8 hex digits of the chip, a dash, 16 of the ECID. */
function newUdid(): string {
  return `00008110-${randomBytes(8).toString('hex').toUpperCase()}`;
}

/**
 * A simulated iPhone on a simulated USB bus: lockdownd (port 62078) with a pairing and TLS sessions,
 * installation_proxy, AFC and syslog_relay started through it, and WebDriverAgent (8100, MJPEG on 9100) drawing
 * SpringBoard with Settings, Safari, Notes and Clock. It has no port of its own: everything is reached through usbmuxd.
 */
export class SimulatedIPhone implements UsbmuxDevice {
  readonly udid: string;
  readonly productId = 0x12a8;
  readonly productType: string;
  readonly version: string;
  readonly buildVersion: string;
  name: string;
  battery: number;
  trusted: boolean;
  wdaRunning: boolean;
  developerImage: boolean;
  /** mobile_image_mounter's side: the images mounted, the personalization nonce, the mounts a host made. */
  readonly imageMounter = new ImageMounterState();
  /** When set, the phone refuses to launch apps with this reason (say, a developer profile it does not trust). */
  launchFailure: string | undefined;
  readonly wdaBundleId: string;
  readonly testManager: TestManager;
  /** App data containers (what house_arrest vends), by bundle id. */
  readonly containers = new Map<string, { path: string; fs: MediaFs }>();
  /** Connections to started services that are still open: a client that leaks sockets shows here. */
  readonly serviceConnections = new Set<Socket>();
  readonly apps = new Map<string, InstalledApp>(SYSTEM_APPS.map((a) => [a.bundleId, a]));
  readonly media = new MediaFs();
  readonly board: Springboard;
  readonly wda: WebDriverAgent;
  /** Boots since it was made: 1 until its first restart, one more after each. */
  bootCount = 1;
  /** When it last booted (ms since the epoch): its uptime counts from here, and restarts from zero. */
  bootedAt = Date.now();
  /** Whether it is off the bus restarting. */
  restarting = false;
  readonly restartMs: number;
  /** Lines it wrote to its syslog, oldest first (bounded). */
  readonly syslog: string[] = [];
  /**
   * How a phone gets what it serves inside a CoreDeviceProxy tunnel (iOS 17.4+): RSD and the RemoteXPC services it
   * lists (RemoteServices). Set by index.ts, because remote-services.ts depends on this module (its phone) and an
   * import from here would make a cycle; a phone made without it serves WDA's ports in its tunnel and nothing else.
   */
  static remoteServicesFor: ((phone: SimulatedIPhone) => TunnelServices) | undefined;
  /** What it serves inside a CoreDeviceProxy tunnel. */
  readonly remoteServices: TunnelServices;
  /** CoreDeviceProxy tunnels open to it now; unplugging or restarting ends them. */
  readonly tunnels = new Set<CoreDeviceTunnel>();
  private pairingData: Pairing | undefined;
  private usbmuxd: SimulatedUsbmuxd | undefined;
  private readonly services = new Map<number, { ssl: boolean; serve: (stream: Socket | TLSSocket) => void }>();
  private readonly syslogClients = new Set<Socket>();
  private nextServicePort = 49152;
  private restartTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(options: SimulatedIPhoneOptions = {}) {
    this.udid = options.udid ?? newUdid();
    this.name = options.name ?? 'iPhone';
    this.productType = options.productType ?? 'iPhone14,6';
    this.version = options.version ?? '17.5.1';
    this.buildVersion = options.buildVersion ?? '21F90';
    this.battery = options.battery ?? 80;
    this.trusted = options.trusted ?? true;
    this.wdaRunning = options.wda ?? parseInt(this.version, 10) < 17;
    this.developerImage = options.developerImage ?? true;
    this.launchFailure = undefined;
    this.restartMs = options.restartMs ?? 1500;
    this.wdaBundleId = options.wdaBundleId ?? WDA_BUNDLE_ID;
    if (options.wdaInstalled ?? true) {
      // As Xcode installs it: developer-signed, with a data container the host can write the test configuration into.
      const container = `/private/var/mobile/Containers/Data/Application/${randomUUID().toUpperCase()}`;
      this.apps.set(this.wdaBundleId, {
        bundleId: this.wdaBundleId,
        name: 'WebDriverAgentRunner-Runner',
        executable: 'WebDriverAgentRunner-Runner',
        version: '1.0',
        build: '1',
        type: 'User',
        signer: 'Apple Development: Benchtop Lab (ABCDE12345)',
        container,
        path: `/private/var/containers/Bundle/Application/${randomUUID().toUpperCase()}/WebDriverAgentRunner-Runner.app`,
      });
      this.containers.set(this.wdaBundleId, { path: container, fs: newDataContainer() });
    }
    for (const app of options.userApps ?? []) {
      const container = { path: `/private/var/mobile/Containers/Data/Application/${randomUUID().toUpperCase()}`, fs: newDataContainer() };
      for (const [name, text] of Object.entries(app.documents ?? {})) container.fs.files.set(`/Documents/${name}`, Buffer.from(text));
      this.containers.set(app.bundleId, container);
      this.apps.set(app.bundleId, {
        bundleId: app.bundleId,
        name: app.name,
        version: app.version ?? '1.0',
        build: '1',
        type: 'User',
        container: container.path,
        path: `/private/var/containers/Bundle/Application/${randomUUID().toUpperCase()}/${app.name.replace(/\W/g, '')}.app`,
        ...(app.fileSharing !== undefined ? { fileSharing: app.fileSharing } : {}),
      });
    }
    this.testManager = new TestManager({
      apps: this.apps,
      container: (id) => this.containers.get(id),
      launchFailure: () => this.launchFailure,
      startWda: () => {
        this.wdaRunning = true;
      },
      stopWda: () => {
        this.wdaRunning = false;
      },
      log: (process, message) => this.log(process, message),
    });
    this.board = new Springboard(this.apps, { name: () => this.name, version: this.version, battery: () => this.battery });
    this.board.log = (process, message) => this.log(process, message);
    this.wda = new WebDriverAgent(this.board, { udid: this.udid, version: this.version });
    this.remoteServices = SimulatedIPhone.remoteServicesFor?.(this) ?? { rsdPort: 58783, listener: () => undefined };
  }

  get pairing(): Pairing | undefined {
    return this.pairingData;
  }

  /** Plugs it into the usbmuxd's bus. A trusted phone's pair record is there already, as after an earlier Trust. */
  async plugInto(usbmuxd: SimulatedUsbmuxd): Promise<void> {
    this.usbmuxd = usbmuxd;
    this.pairingData ??= await createPairing(usbmuxd.buid);
    if (this.trusted) usbmuxd.savePairRecord(this.udid, pairRecordOf(this.pairingData));
    usbmuxd.attach(this);
  }

  unplug(): void {
    this.usbmuxd?.detach(this.udid);
    for (const socket of this.syslogClients) socket.destroy();
    // The tunnel's TCP connections go with it: their users see them closed, as a pulled cable resets them.
    for (const tunnel of this.tunnels) tunnel.close();
  }

  /** Someone tapped "Trust" on the phone: the host's usbmuxd gets the pair record. */
  trust(): void {
    this.trusted = true;
    if (this.usbmuxd && this.pairingData) this.usbmuxd.savePairRecord(this.udid, pairRecordOf(this.pairingData));
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    this.unplug();
    this.wda.stop();
  }

  /**
   * WebDriverAgent dies (a crash, or its runner stopped from Xcode): port 8100 and 9100 refuse connections, the open
   * ones break, and its session is gone.
   */
  killWda(): void {
    this.wdaRunning = false;
    this.wda.stop();
    this.wda.sessionId = undefined;
  }

  /** Seconds since it booted. */
  get uptimeSeconds(): number {
    return (Date.now() - this.bootedAt) / 1000;
  }

  /**
   * Restarts, as diagnostics_relay's Restart does: it drops off the bus (usbmuxd's Listen clients hear Detached, and
   * every tunnel to it breaks), every app and WebDriverAgent stop, and `restartMs` later it attaches again with a
   * new boot count and uptime, on its lock screen, without the Developer Disk Image (a restart unmounts it). WDA is
   * running again if it was: on a real phone the engine starts the runner again when it sees the phone
   * (wda-launcher.ts), which needs a Mac's devicectl on iOS 17+ or the image mounted again before 17; this stands
   * for a host that can.
   */
  restart(): void {
    if (this.restarting || this.stopped) return;
    this.restarting = true;
    const wdaWasRunning = this.wdaRunning;
    this.log('SpringBoard', 'Restarting: requested by com.apple.mobile.diagnostics_relay');
    this.unplug();
    this.services.clear();
    for (const socket of this.serviceConnections) socket.destroy();
    this.killWda();
    this.board.boot();
    this.developerImage = false;
    this.imageMounter.reboot();
    this.restartTimer = setTimeout(() => {
      this.restarting = false;
      if (this.stopped || !this.usbmuxd) return;
      this.bootCount++;
      this.bootedAt = Date.now();
      this.wdaRunning = wdaWasRunning;
      this.log('kernel', `Darwin Kernel booted: iOS ${this.version} (${this.buildVersion}), boot ${this.bootCount}`);
      this.usbmuxd.attach(this);
    }, this.restartMs);
  }

  // ---- the bus side ----

  /** Connections made while the phone is wedged, served when it answers again. */
  private parked: Array<{ port: number; socket: Socket }> | undefined;

  listening(port: number): boolean {
    if (port === LOCKDOWN_PORT) return true;
    if (port === WDA_PORT || port === MJPEG_PORT) return this.wdaRunning;
    return this.services.has(port);
  }

  /**
   * The phone stops answering over USB and keeps what is opened to it open: what a host sees of an iPhone whose cable
   * went bad (usbmuxd still lists it, and lockdown never replies). `false` serves what waited, and answers again.
   */
  wedge(on = true): void {
    if (on) {
      this.parked ??= [];
      return;
    }
    const parked = this.parked ?? [];
    this.parked = undefined;
    for (const { port, socket } of parked) if (!socket.destroyed) this.accept(port, socket);
  }

  accept(port: number, socket: Socket): void {
    if (this.parked) return void this.parked.push({ port, socket });
    socket.setNoDelay(true);
    if (port === LOCKDOWN_PORT) return serveLockdown(socket, this.lockdownHost());
    if (port === WDA_PORT) return this.wda.accept(socket);
    if (port === MJPEG_PORT) return this.wda.acceptMjpeg(socket);
    const service = this.services.get(port);
    // A started service takes one connection, as lockdownd's per-service listener does.
    this.services.delete(port);
    if (!service) return void socket.destroy();
    this.serviceConnections.add(socket);
    socket.once('close', () => this.serviceConnections.delete(socket));
    if (!service.ssl) return service.serve(socket);
    // The secure developer services: TLS with the phone's certificate from the pairing, as lockdown's session.
    const pairing = this.pairingData!;
    const tls = new TLSSocket(socket, { isServer: true, key: pairing.devicePrivateKey, cert: pairing.deviceCertificate, requestCert: true, rejectUnauthorized: false });
    tls.on('error', () => socket.destroy());
    tls.on('close', () => socket.destroy());
    service.serve(tls);
  }

  /** The major iOS version, which decides which developer services lockdown offers. */
  get majorVersion(): number {
    return parseInt(this.version, 10);
  }

  /** Whether it runs iOS `major.minor` or later. */
  runsAtLeast(major: number, minor: number): boolean {
    const [m = 0, n = 0] = this.version.split('.').map((part) => parseInt(part, 10));
    return m > major || (m === major && n >= minor);
  }

  /**
   * Who accepts a TCP connection to `port` on its tunnel address: WebDriverAgent's ports while it runs (as through
   * usbmuxd), else the RemoteXPC services; undefined is a closed port.
   */
  tunnelListener(port: number): ((socket: Duplex) => void) | undefined {
    // WDA's server takes the tunnel's streams as it takes usbmuxd's sockets: it calls only what both have.
    if (port === WDA_PORT) return this.wdaRunning ? (socket) => this.wda.accept(socket as Socket) : undefined;
    if (port === MJPEG_PORT) return this.wdaRunning ? (socket) => this.wda.acceptMjpeg(socket as Socket) : undefined;
    return this.remoteServices.listener(port);
  }

  log(process: string, message: string): void {
    const time = new Date().toString().slice(4, 24).replace(/ (\d{4}) /, ' ');
    // As iOS writes them: process(subsystem's library)[pid]; the kernel's pid is 0.
    const [library, pid] = SYSLOG_SOURCES[process] ?? [undefined, 400 + [...process].reduce((n, ch) => (n * 31 + ch.charCodeAt(0)) % 2000, 0)];
    const line = `${time} ${this.name.replace(/\s/g, '-')} ${process}${library ? `(${library})` : ''}[${pid}] <Notice>: ${message}`;
    this.syslog.push(line);
    if (this.syslog.length > 1000) this.syslog.shift();
    for (const socket of this.syslogClients) socket.write(`${line}\n\0`);
  }

  private openTunnel(stream: TLSSocket): void {
    const tunnel = new CoreDeviceTunnel(stream, { rsdPort: this.remoteServices.rsdPort, listener: (port) => this.tunnelListener(port) });
    this.tunnels.add(tunnel);
    tunnel.onClose(() => this.tunnels.delete(tunnel));
  }

  private lockdownHost() {
    return {
      pairing: () => (this.trusted ? this.pairingData : undefined),
      values: (domain: string) => this.values(domain),
      startService: (name: string) => this.startService(name),
    };
  }

  private values(domain: string): Record<string, unknown> | undefined {
    switch (domain) {
      case '':
        return {
          ActivationState: 'Activated',
          BuildVersion: this.buildVersion,
          CPUArchitecture: 'arm64e',
          DeviceClass: 'iPhone',
          DeviceColor: '1',
          DeviceName: this.name,
          // What a host pairs against: it signs a device certificate for this key and asks the phone to trust it.
          DevicePublicKey: this.pairingData
            ? Buffer.from(createPublicKey(this.pairingData.devicePrivateKey).export({ type: 'pkcs1', format: 'pem' }) as string)
            : undefined,
          HardwareModel: 'D49AP',
          ModelNumber: 'MMXF3',
          PasswordProtected: false,
          ProductName: 'iPhone OS',
          ProductType: this.productType,
          ProductVersion: this.version,
          SerialNumber: this.udid.slice(-12),
          TimeIntervalSince1970: Date.now() / 1000,
          TimeZone: 'Europe/Berlin',
          TimeZoneOffsetFromUTC: 3600,
          UniqueChipID: parseInt(this.udid.slice(-8), 16),
          UniqueDeviceID: this.udid,
          WiFiAddress: this.pairingData?.wifiMacAddress ?? '00:00:00:00:00:00',
        };
      case 'com.apple.mobile.battery':
        return { BatteryCurrentCapacity: this.battery, BatteryIsCharging: true, ExternalChargeCapable: true, ExternalConnected: true, FullyCharged: this.battery >= 100, GasGaugeCapability: true, HasBattery: true };
      case 'com.apple.security.mac.amfi':
        return { DeveloperModeStatus: true };
      default:
        return undefined;
    }
  }

  private startService(name: string): { port: number; ssl: boolean } | undefined {
    let serve: ((socket: Socket) => void) | undefined;
    let serveTls: ((stream: TLSSocket) => void) | undefined;
    // testmanagerd and instruments come with the Developer Disk Image, through lockdown only before iOS 17 (after,
    // through a RemoteXPC tunnel). This phone serves the iOS 14+ secure variants; the older handshake-only ones not.
    const developer = this.developerImage && this.majorVersion < 17 && this.majorVersion >= 14;
    if (name === DIAGNOSTICS_RELAY_SERVICE) {
      serve = (s) => serveDiagnosticsRelay(s, {
        restart: () => this.restart(),
        gasGauge: () => ({ CycleCount: 112, DesignCapacity: 2018, FullChargeCapacity: 1870, Status: 'Success' }),
      });
    } else if (name === HOUSE_ARREST_SERVICE) serve = (s) => this.testManager.serveHouseArrest(s);
    // Plain, as on a real phone: what it mounts is checked by its signature, not by the connection.
    else if (name === IMAGE_MOUNTER_SERVICE) serve = (s) => serveImageMounter(s, this);
    // The tunnel came with iOS 17.4 (17.0 to 17.3 need a Mac's remote pairing); lockdown asks for TLS on it, as on
    // the developer services.
    else if (name === CORE_DEVICE_PROXY_SERVICE && this.runsAtLeast(17, 4)) serveTls = (s) => this.openTunnel(s);
    else if (developer && name === TESTMANAGERD_SECURE_SERVICE) serveTls = (s) => this.testManager.serveTestmanagerd(s);
    else if (developer && name === INSTRUMENTS_SECURE_SERVICE) serveTls = (s) => this.testManager.serveInstruments(s);
    else if (name === TESTMANAGERD_SERVICE || name === INSTRUMENTS_SERVICE) return undefined;
    else if (name === WEB_INSPECTOR_SERVICE) serveTls = serveWebInspector;
    if (name === AFC_SERVICE) serve = (s) => serveAfc(s, this.media);
    else if (name === INSTALLATION_PROXY_SERVICE) {
      serve = (s) =>
        serveInstallationProxy(s, {
          apps: this.apps,
          media: this.media,
          containers: this.containers,
          appsChanged: () => {
            for (const id of this.board.running) if (!this.apps.has(id)) this.board.forget(id);
            this.board.changed();
          },
        });
    } else if (name === SYSLOG_SERVICE) {
      serve = (s) => {
        s.on('error', () => undefined);
        this.syslogClients.add(s);
        s.on('close', () => this.syslogClients.delete(s));
        // Clients write anything to start the stream; the relay ignores what they send.
        s.on('data', () => undefined);
      };
    }
    if (!serve && !serveTls) return undefined;
    const port = this.nextServicePort++;
    if (this.nextServicePort > 65000) this.nextServicePort = 49152;
    this.services.set(port, serveTls ? { ssl: true, serve: (s) => serveTls(s as TLSSocket) } : { ssl: false, serve: (s) => serve!(s as Socket) });
    return { port, ssl: !!serveTls };
  }
}
