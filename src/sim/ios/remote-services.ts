import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { APP_SERVICE_FEATURES, serveAppService } from './remote/app-service.js';
import { serveRsd, type RsdService } from './remote/rsd.js';
import type { SimulatedIPhone } from './simulated-iphone.js';

export const RSD_PORT = 58783;
export const TESTMANAGERD_REMOTE_SERVICE = 'com.apple.dt.testmanagerd.remote';
export const APP_SERVICE = 'com.apple.coredevice.appservice';
export const OPEN_STDIO_SOCKET_SERVICE = 'com.apple.coredevice.openstdiosocket';
/** Instruments' remote server (process control, device info) on iOS 17+, what go-ios's ps, kill and launch use. */
export const DT_SERVICE_HUB = 'com.apple.instruments.dtservicehub';

/** Stdio sockets a phone keeps for launches at most; a host opening more closes its oldest. */
const MAX_STDIO_SOCKETS = 32;

/**
 * What an iOS 17.4+ phone serves inside its CoreDeviceProxy tunnel, by TCP port on the phone's tunnel address:
 * RemoteServiceDiscovery (RSD, RemoteXPC over HTTP/2 framing) and the services it lists (testmanagerd.remote,
 * coredevice.appservice, ...). The tunnel's TCP endpoint (tunnel/) asks `listener(port)` for each SYN; a port with no
 * listener is answered with a reset, as a phone's closed port is.
 *
 * The services, as Xcode 15+ (and go-ios's runwda) use them to run an XCUITest runner:
 * - com.apple.dt.testmanagerd.remote: testmanagerd's DTX, plain (no RSDCheckin, no TLS: the tunnel is the trust);
 * - com.apple.coredevice.appservice: RemoteXPC; launches the runner (XCTestManagerVariant DDI), lists and signals
 *   processes;
 * - com.apple.instruments.dtservicehub: instruments' DTX (process control, device info), plain;
 * - com.apple.coredevice.openstdiosocket: raw; the phone writes the socket's UUID (16 bytes), which a launch names as
 *   the process's standard I/O.
 * Only what this phone serves is listed: a real one lists some 80 services.
 */
export class RemoteServices {
  /** RSD's port, which the CDTunnel handshake announces as serverRSDPort. */
  readonly rsdPort = RSD_PORT;
  /** RSD's BootSessionUUID, one per boot of the phone (by its boot count). */
  private readonly bootSessions = new Map<number, string>();
  private readonly byName = new Map<string, RsdService & { serve: (socket: Duplex) => void; developer: boolean }>();
  private readonly stdioSockets = new Map<string, Duplex>();

  constructor(readonly phone: SimulatedIPhone) {
    const testManager = () => this.phone.testManager;
    this.add(true, TESTMANAGERD_REMOTE_SERVICE, 50061, 'com.apple.private.dt.testmanagerd.client', { UsesRemoteXPC: false }, (s) => testManager().serveTestmanagerd(s));
    this.add(false, APP_SERVICE, 50056, 'com.apple.private.CoreDevice.canInstallCustomerContent', { Features: APP_SERVICE_FEATURES, ServiceVersion: 1, UsesRemoteXPC: true }, (s) =>
      serveAppService(s, {
        testManager: this.phone.testManager,
        stdio: (uuid) => this.stdioSockets.get(uuid),
        log: (process, message) => this.phone.log(process, message),
      }),
    );
    this.add(true, DT_SERVICE_HUB, 49664, 'com.apple.private.dt.instruments.dtservicehub.client', { Features: ['com.apple.dt.profile'], version: 1 }, (s) => testManager().serveInstruments(s));
    this.add(false, OPEN_STDIO_SOCKET_SERVICE, 50055, 'com.apple.private.CoreDevice.canInstallCustomerContent', { Features: [], ServiceVersion: 1, UsesRemoteXPC: true }, (s) => this.openStdio(s));
  }

  /**
   * Who accepts a connection to `port` inside the tunnel, or undefined for a closed port. Every service closes its side
   * when the host closes its own (the tunnel's connections are half-open capable): an IDE that goes away ends its
   * testmanagerd session, and with it the test runner.
   */
  listener(port: number): ((socket: Duplex) => void) | undefined {
    const accept = (serve: (socket: Duplex) => void) => (socket: Duplex) => {
      socket.on('error', () => undefined);
      socket.once('end', () => socket.end());
      serve(socket);
    };
    if (port === this.rsdPort) {
      return accept((socket) => {
        if (!this.bootSessions.has(this.phone.bootCount)) this.bootSessions.set(this.phone.bootCount, randomUUID());
        serveRsd(socket, this.phone, this.offered(), this.bootSessions.get(this.phone.bootCount)!);
      });
    }
    for (const service of this.offered().values()) if (service.port === port) return accept(service.serve);
    return undefined;
  }

  /**
   * What the phone offers now: testmanagerd and instruments come with the personalized Developer Disk Image, so a
   * phone without it mounted (after a restart, or never paired with Xcode) neither lists them nor listens for them.
   */
  private offered(): Map<string, RsdService & { serve: (socket: Duplex) => void }> {
    return new Map([...this.byName].filter(([, service]) => !service.developer || this.phone.developerImage));
  }

  private add(developer: boolean, name: string, port: number, entitlement: string, properties: RsdService['properties'], serve: (socket: Duplex) => void): void {
    this.byName.set(name, { port, entitlement, properties, serve, developer });
  }

  private openStdio(socket: Duplex): void {
    const uuid = randomUUID();
    const bytes = Buffer.from(uuid.replace(/-/g, ''), 'hex');
    if (this.stdioSockets.size >= MAX_STDIO_SOCKETS) {
      const [oldest, stream] = this.stdioSockets.entries().next().value as [string, Duplex];
      this.stdioSockets.delete(oldest);
      stream.destroy();
    }
    this.stdioSockets.set(uuid, socket);
    socket.on('close', () => {
      if (this.stdioSockets.get(uuid) === socket) this.stdioSockets.delete(uuid);
    });
    // What the host writes is the process's standard input; nothing here reads it.
    socket.on('data', () => undefined);
    socket.write(bytes);
  }
}
