import { createServer, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { DeviceConnection, type ServiceSession, type StreamIo } from '../../../../protocols/adb/transport.js';
import { verifyAdbSignature, type AdbPublicKey } from '../../../../protocols/adb/keys.js';
import { AdbFail, hostQuery, openDeviceService, type AdbServerAddress } from '../../../../protocols/adb/host.js';

/**
 * Services that reach beyond the phone or outlive the checkout. `reverse:` would listen on the lab box's own loopback,
 * `tcpip:`/`usb:` change how adbd listens, root/remount/verity change the phone's image, and sideload or a reboot into
 * the bootloader or recovery leaves Android (and the lab) altogether.
 */
const REFUSED = /^(reverse|tcpip|usb|root|unroot|remount|sideload|sideload-host|enable-verity|disable-verity|backup|restore):|^(root|unroot|remount|usb)$|^reboot:(?!$)/;

export function refusedService(service: string): boolean {
  return REFUSED.test(service);
}

interface Connection {
  /** The peer's IP address: what its pool of connections not signed in is kept by. */
  address: string;
  peer: string;
  fingerprint?: string;
  since: number;
}

export interface BridgeConnection {
  /** host:port the connection comes from. */
  peer: string;
  /** The fingerprint of the key that signed in. */
  fingerprint: string;
  since: number;
}

export interface AdbBridgeOptions {
  serial: string;
  /** The lab's adb server, which holds the phone's transport. */
  labAdb: AdbServerAddress;
  /** Where to listen. */
  host: string;
  /** The keys allowed in, read at each sign-in, so that a key added or deleted meanwhile counts at once. */
  keys: () => AdbPublicKey[];
  /** A host that has not signed in by then is dropped. */
  authTimeoutMs: number;
  /** Called when a stream carries bytes either way: what an idle-release would count as activity. */
  onTraffic?: () => void;
  log: (message: string) => void;
}

export const ADB_BRIDGE_LIMITS = {
  /** adb servers signed in at once: one user has one, CI a few. Only a signed-in key takes one of these. */
  signedIn: 8,
  /**
   * Connections not signed in yet, from one address and from all: a newcomer past either evicts the oldest (of its own
   * address, or of the address holding the most), so that strangers holding sockets open cannot keep the holder out.
   */
  pendingPerPeer: 16,
  pending: 64,
  /** Streams open at once on one signed-in connection: each is a socket here and one in the lab's adb server. */
  streamsPerConnection: 64,
} as const;

/** Bytes a stream may hold in the bridge in either direction before it waits: a few of adb's 1 MiB packets. */
const RELAY_WINDOW = 4 * 1024 * 1024;
/** A refused stranger is logged once per this long, not once per redial. */
const REFUSAL_LOG_MS = 60_000;

/**
 * adbd's side of the protocol on a TCP port, for one held phone: the user's own adb server `adb connect`s to it, signs
 * in with an RSA key the lab knows, and each stream it opens is relayed as the same service on the lab's adb server
 * (`host:transport:<serial>`, then the service). The phone's own features pass through in the banner, so shell_v2,
 * cmd and abb work as on the phone itself.
 */
export class AdbBridge {
  private server: Server | undefined;
  /** Every connection, oldest first (a Map keeps insertion order). */
  private readonly live = new Map<DeviceConnection, Connection>();
  private banner = '';
  private lastRefusalLog = 0;
  private lastFullLog = 0;
  private closed = false;

  constructor(private readonly options: AdbBridgeOptions) {}

  /** Reads the phone's banner from the lab's adb server, then listens on `port`. */
  async start(port: number): Promise<void> {
    const { labAdb, serial } = this.options;
    const [features, devices] = await Promise.all([hostQuery(labAdb, `host-serial:${serial}:features`), hostQuery(labAdb, 'host:devices-l')]);
    const line = devices.split('\n').find((l) => l.split(/\s+/)[0] === serial) ?? '';
    const prop = (name: string) => new RegExp(`\\b${name}:(\\S+)`).exec(line)?.[1] ?? '';
    this.banner = `device::ro.product.name=${prop('product')};ro.product.model=${prop('model')};ro.product.device=${prop('device')};features=${features.trim()}`;
    const server = createServer((socket) => this.accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: this.options.host, port }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (error) => this.options.log(`adb bridge for ${serial}: ${error.message}`));
    this.server = server;
  }

  connections(): BridgeConnection[] {
    return [...this.live.values()]
      .filter((c): c is typeof c & { fingerprint: string } => c.fingerprint !== undefined)
      .map(({ peer, fingerprint, since }) => ({ peer, fingerprint, since }));
  }

  /** Drops the signed-in connections whose key is no longer among `keys` (its user lost access to the phone). */
  recheck(): void {
    const allowed = new Set(this.options.keys().map((k) => k.fingerprint));
    for (const [conn, entry] of this.live) if (entry.fingerprint !== undefined && !allowed.has(entry.fingerprint)) conn.close();
  }

  /**
   * Stops listening and drops every connection at once (the user's adb shows the phone offline), synchronously, so
   * that the cleanup that follows cannot be raced by a stream opened meanwhile.
   */
  close(): void {
    this.closed = true;
    this.server?.close();
    for (const conn of [...this.live.keys()]) conn.close();
    this.live.clear();
  }

  private accept(socket: Socket): void {
    if (this.closed) return void socket.destroy();
    const address = socket.remoteAddress ?? '';
    this.makeRoom(address);
    const peer = `${address}:${socket.remotePort}`;
    const entry: Connection = { address, peer, since: Date.now() };
    const conn = new DeviceConnection(socket, {
      banner: () => this.banner,
      openService: (service, io) => this.open(service, io),
      maxStreams: ADB_BRIDGE_LIMITS.streamsPerConnection,
      auth: {
        verify: (token, signature) => {
          const key = this.options.keys().find((k) => verifyAdbSignature(k.key, token, signature));
          if (!key) return false;
          if (this.connections().length >= ADB_BRIDGE_LIMITS.signedIn) {
            this.full();
            conn.close();
            return false;
          }
          entry.fingerprint = key.fingerprint;
          return true;
        },
        onPublicKey: () => this.refused(peer),
      },
      onOnline: () => {
        clearTimeout(timer);
        entry.since = Date.now();
      },
    });
    this.live.set(conn, entry);
    const timer = setTimeout(() => {
      if (entry.fingerprint === undefined) conn.close();
    }, this.options.authTimeoutMs);
    timer.unref();
    socket.on('close', () => {
      clearTimeout(timer);
      this.live.delete(conn);
    });
  }

  /**
   * Keeps the connections not signed in within their pools before a newcomer joins them: past its address's pool the
   * oldest of that address goes, past the whole pool the oldest of the address holding the most. A stranger's sockets,
   * however many and however fast reopened, then only push out each other, and the holder's adb (which signs in within
   * a few round trips of connecting) is not the oldest of anything for long.
   */
  private makeRoom(address: string): void {
    const pending = [...this.live].filter(([, c]) => c.fingerprint === undefined);
    const perPeer = new Map<string, number>();
    for (const [, c] of pending) perPeer.set(c.address, (perPeer.get(c.address) ?? 0) + 1);
    let from: string | undefined;
    if ((perPeer.get(address) ?? 0) >= ADB_BRIDGE_LIMITS.pendingPerPeer) from = address;
    else if (pending.length >= ADB_BRIDGE_LIMITS.pending) from = [...perPeer].reduce((a, b) => (b[1] > a[1] ? b : a))[0];
    if (from === undefined) return;
    const oldest = pending.find(([, c]) => c.address === from)!;
    oldest[0].close();
    this.live.delete(oldest[0]);
  }

  /** A ninth signed-in adb server is refused, logged once a minute like a refused key. */
  private full(): void {
    const now = Date.now();
    if (now - this.lastFullLog < REFUSAL_LOG_MS) return;
    this.lastFullLog = now;
    this.options.log(`adb bridge for ${this.options.serial}: refused a connection past ${ADB_BRIDGE_LIMITS.signedIn} signed in`);
  }

  /** adb offers its public key only once every key it has was refused: worth one line, not one per redial. */
  private refused(peer: string): void {
    const now = Date.now();
    if (now - this.lastRefusalLog < REFUSAL_LOG_MS) return;
    this.lastRefusalLog = now;
    this.options.log(`adb bridge for ${this.options.serial}: refused an unknown adb key from ${peer}`);
  }

  private async open(service: string, io: StreamIo): Promise<ServiceSession | undefined> {
    if (refusedService(service)) {
      this.options.log(`adb bridge for ${this.options.serial}: refused ${service.split(':')[0]}`);
      return undefined;
    }
    let upstream: Duplex;
    try {
      upstream = await openDeviceService(this.options.labAdb, this.options.serial, service);
    } catch (error) {
      // A service the phone does not offer is closed at once, as adbd does.
      if (!(error instanceof AdbFail)) this.options.log(`adb bridge for ${this.options.serial}: ${(error as Error).message}`);
      return undefined;
    }
    if (io.signal.aborted || this.closed) {
      upstream.destroy();
      return undefined;
    }
    const traffic = this.options.onTraffic;
    // Toward the user: read ahead up to a window while earlier packets await the user's OKAY, so that the lab
    // server's side keeps streaming instead of waiting for each round trip through the user's adb.
    let unsent = 0;
    upstream.on('data', (chunk: Buffer) => {
      traffic?.();
      unsent += chunk.length;
      if (unsent > RELAY_WINDOW) upstream.pause();
      void io.write(chunk).then(() => {
        unsent -= chunk.length;
        if (unsent <= RELAY_WINDOW && upstream.isPaused()) upstream.resume();
      });
    });
    upstream.on('end', () => void io.end());
    upstream.on('error', () => void io.end());
    upstream.resume();
    return {
      // Toward the phone: the user's next packet may come as soon as this one is queued, up to the window; waiting
      // for each packet to drain would make every hop wait for the one after it.
      onData: (data) => {
        traffic?.();
        upstream.write(data);
        if (upstream.writableLength <= RELAY_WINDOW) return;
        return new Promise<void>((resolve) => {
          const done = () => {
            upstream.off('drain', done);
            upstream.off('close', done);
            resolve();
          };
          upstream.on('drain', done);
          upstream.on('close', done);
        });
      },
      onClose: () => upstream.destroy(),
    };
  }
}
