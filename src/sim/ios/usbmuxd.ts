import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import type { PlistDict } from '../../protocols/apple/plist-wire.js';
import { MUX_RESULT as RESULT, muxResult as result, sendMux, serveMuxClient, swap16 } from '../../protocols/apple/usbmuxd-wire.js';

/** What the multiplexer needs of a phone on its bus. */
export interface UsbmuxDevice {
  readonly udid: string;
  /** Apple's USB product id for the model (0x12a8 for every iPhone since the 5). */
  readonly productId: number;
  /** Whether something on the phone listens on the TCP port; if not, the client gets CONNREFUSED. */
  listening(port: number): boolean;
  /** Hands a connection to the phone's TCP port. */
  accept(port: number, socket: Socket): void;
}


interface Attached {
  id: number;
  device: UsbmuxDevice;
  /** Where on the bus it sits; stable for the attachment, as on a real hub. */
  locationId: number;
}

/**
 * A usbmuxd, as Apple's (macOS) and libimobiledevice's (Linux) daemons speak it, on a loopback TCP port: what
 * `USBMUXD_SOCKET_ADDRESS=127.0.0.1:PORT` points libusbmuxd and appium-ios-device at. Each client connection carries
 * 16-byte little-endian headers (length, version, message type, tag) and XML plists; `Listen` turns a connection into
 * a stream of Attached/Detached events, and `Connect` turns it into a raw tunnel to a port on the phone.
 * Pair records live here, as they do in the real daemon (/var/lib/lockdown), keyed by the phone's UDID.
 */
export class SimulatedUsbmuxd extends EventEmitter {
  private server: Server | undefined;
  private readonly attached = new Map<string, Attached>();
  private readonly watchers = new Set<Socket>();
  private readonly clients = new Set<Socket>();
  private readonly pairRecords = new Map<string, Buffer>();
  private nextId = 1;
  readonly buid = randomUUID().toUpperCase();

  constructor() {
    super();
    // Every open tunnel listens for its phone's detach: a client with a pool of connections (Appium's WDA proxy, a
    // browser) holds more than ten at once, which is use, not a leak.
    this.setMaxListeners(0);
  }
  address = '';
  /** Client connections accepted since it started: how many a client (the engine) opens, as a test counts them. */
  accepted = 0;

  /** Listens on 127.0.0.1 and returns `host:port`. */
  async start(port = 0): Promise<string> {
    const server = createServer((socket) => this.serve(socket));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    const { port: bound } = server.address() as { port: number };
    this.address = `127.0.0.1:${bound}`;
    return this.address;
  }

  async stop(): Promise<void> {
    for (const socket of this.clients) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** The UDIDs of the phones on the bus now. */
  attachedUdids(): string[] {
    return [...this.attached.keys()];
  }

  /** Plugs a phone in: every Listen client hears Attached. */
  attach(device: UsbmuxDevice): number {
    const existing = this.attached.get(device.udid);
    if (existing) return existing.id;
    const entry: Attached = { id: this.nextId++, device, locationId: 0x14100000 + this.nextId };
    this.attached.set(device.udid, entry);
    for (const socket of this.watchers) sendMux(socket, 0, attachedMessage(entry));
    return entry.id;
  }

  /** Pulls a phone out: every Listen client hears Detached, and its open tunnels break as a cable pull breaks them. */
  detach(udid: string): void {
    const entry = this.attached.get(udid);
    if (!entry) return;
    this.attached.delete(udid);
    for (const socket of this.watchers) sendMux(socket, 0, { MessageType: 'Detached', DeviceID: entry.id });
    this.emit('detached', udid);
  }

  /** The pairing a host made with the phone (what a tap on "Trust" leaves behind), as an XML plist. */
  savePairRecord(udid: string, record: Buffer): void {
    this.pairRecords.set(udid, record);
  }

  deletePairRecord(udid: string): void {
    this.pairRecords.delete(udid);
  }

  private serve(socket: Socket): void {
    this.accepted++;
    this.clients.add(socket);
    socket.on('close', () => {
      this.clients.delete(socket);
      this.watchers.delete(socket);
    });
    socket.on('error', () => undefined);
    serveMuxClient(socket, {
      request: (request, reply) => this.handle(socket, reply, request),
      connect: (request, reply, handOver) => this.connect(socket, reply, request, handOver),
    });
  }

  private handle(socket: Socket, reply: (payload: PlistDict) => void, request: PlistDict): void {
    switch (request.MessageType) {
      case 'ListDevices':
        return reply({ DeviceList: [...this.attached.values()].map(attachedMessage) });
      case 'Listen':
        this.watchers.add(socket);
        reply(result(RESULT.OK));
        for (const entry of this.attached.values()) sendMux(socket, 0, attachedMessage(entry));
        return;
      case 'ReadBUID':
        return reply({ BUID: this.buid });
      case 'ReadPairRecord': {
        const record = this.pairRecords.get(String(request.PairRecordID));
        // The real daemon answers a missing record with ENOENT's number.
        return reply(record ? { PairRecordData: record } : result(2));
      }
      case 'SavePairRecord': {
        const data = request.PairRecordData;
        if (!(data instanceof Uint8Array) || typeof request.PairRecordID !== 'string') return reply(result(RESULT.BADCOMMAND));
        this.pairRecords.set(request.PairRecordID, Buffer.from(data));
        return reply(result(RESULT.OK));
      }
      case 'DeletePairRecord':
        this.pairRecords.delete(String(request.PairRecordID));
        return reply(result(RESULT.OK));
      case 'ListListeners':
        return reply({ ListenerList: [] });
      default:
        return reply(result(RESULT.BADCOMMAND));
    }
  }

  /** Returns true once the socket belongs to the phone. */
  private connect(socket: Socket, reply: (payload: PlistDict) => void, request: PlistDict, release: () => void): boolean {
    const entry = [...this.attached.values()].find((a) => a.id === request.DeviceID);
    if (!entry) {
      reply(result(RESULT.BADDEV));
      return false;
    }
    // PortNumber travels in network byte order inside the plist, a quirk every client reproduces.
    const port = swap16(Number(request.PortNumber));
    if (!entry.device.listening(port)) {
      reply(result(RESULT.CONNREFUSED));
      return false;
    }
    reply(result(RESULT.OK));
    release();
    this.clients.delete(socket);
    const udid = entry.device.udid;
    const onDetach = (gone: string) => gone === udid && socket.destroy();
    this.on('detached', onDetach);
    socket.once('close', () => this.off('detached', onDetach));
    entry.device.accept(port, socket);
    return true;
  }
}

function attachedMessage(entry: Attached): PlistDict {
  return {
    MessageType: 'Attached',
    DeviceID: entry.id,
    Properties: {
      ConnectionSpeed: 480000000,
      ConnectionType: 'USB',
      DeviceID: entry.id,
      LocationID: entry.locationId,
      ProductID: entry.device.productId,
      SerialNumber: entry.device.udid,
      USBSerialNumber: entry.device.udid.replace(/-/g, ''),
    },
  };
}
