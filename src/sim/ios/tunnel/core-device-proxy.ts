import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { formatIpv6Address, ipv6PacketLength } from './packets.js';
import { TcpEndpoint, type TcpListener } from './tcp-endpoint.js';

/** Lockdown's name for the tunnel service of iOS 17.4 and later. */
export const CORE_DEVICE_PROXY_SERVICE = 'com.apple.internal.devicecompute.CoreDeviceProxy';

const MAGIC = Buffer.from('CDTunnel');
/** A handshake is a few dozen bytes of JSON; a peer that declares more is not a CoreDevice host. */
const MAX_HANDSHAKE = 1024;
/** IPv6's minimum MTU, and the most the phone grants (what it answers pymobiledevice3's request of 16000 with). */
const MIN_MTU = 1280;
const MAX_MTU = 16000;

/** What a phone serves inside its tunnel (remote-services.ts's RemoteServices has this shape). */
export interface TunnelServices {
  /** RSD's port on the phone's tunnel address, which the handshake announces as serverRSDPort. */
  readonly rsdPort: number;
  listener: TcpListener;
}

export interface CoreDeviceTunnelOptions {
  rsdPort: number;
  /** Who accepts a connection to a port on the phone's tunnel address (WDA's ports, then TunnelServices'). */
  listener: TcpListener;
}

/**
 * One CoreDeviceProxy tunnel, on the service connection lockdown started (in TLS with the pair record's keys): the
 * CDTunnel handshake, then raw IPv6 packets both ways, back to back, each framed by its own header's length.
 *
 *   host:  "CDTunnel" u16be(length) {"type":"clientHandshakeRequest","mtu":1280}
 *   phone: "CDTunnel" u16be(length) {"type":"serverHandshakeResponse","clientParameters":{"address","netmask","mtu"},
 *          "serverAddress","serverRSDPort"}
 *
 * The addresses are a fresh unique local /64 (fdXX:XXXX:XXXX::/64), the phone ::1 and the host ::2, as a phone gives.
 */
export class CoreDeviceTunnel {
  readonly serverAddress: string;
  readonly clientAddress: string;
  /** The MTU granted in the handshake, once it is done. */
  mtu = 0;
  endpoint: TcpEndpoint | undefined;
  private pending: Buffer = Buffer.alloc(0);
  private closed = false;
  private corked = false;
  private readonly closeHandlers: Array<() => void> = [];

  constructor(
    private readonly stream: Duplex,
    private readonly options: CoreDeviceTunnelOptions,
  ) {
    const server = Buffer.concat([Buffer.from([0xfd]), randomBytes(5), Buffer.alloc(10)]);
    server[15] = 1;
    const client = Buffer.from(server);
    client[15] = 2;
    this.serverAddress = formatIpv6Address(server);
    this.clientAddress = formatIpv6Address(client);
    stream.on('error', () => undefined);
    stream.on('close', () => this.close());
    stream.on('data', (chunk: Buffer) => this.received(chunk, server));
  }

  /** Called once, when the tunnel ends (either side). */
  onClose(handler: () => void): void {
    if (this.closed) handler();
    else this.closeHandlers.push(handler);
  }

  /** Ends the tunnel: its connections are reset and the service connection closes, as when the cable is pulled. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.endpoint?.close();
    this.pending = Buffer.alloc(0);
    this.stream.destroy();
    for (const handler of this.closeHandlers.splice(0)) handler();
  }

  private received(chunk: Buffer, server: Buffer): void {
    if (this.closed) return;
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    if (!this.endpoint && !this.handshake(server)) return;
    const packets: Buffer[] = [];
    for (;;) {
      const length = ipv6PacketLength(this.pending);
      // Not an IPv6 header where one must start: the framing is lost and nothing after it can be read.
      if (length === 'bad') return this.close();
      if (length === undefined || this.pending.length < length) break;
      const packet = this.pending.subarray(0, length);
      this.pending = this.pending.subarray(length);
      // Longer than the MTU both sides agreed is not a packet this link carries; the next one is still framed.
      if (length > this.mtu) this.endpoint!.dropped++;
      else packets.push(packet);
    }
    this.endpoint!.receiveAll(packets);
  }

  /**
   * Writes a packet to the host. The packets of one turn of the event loop (a burst of segments, the ACKs for a
   * read) leave in one write, so in as few TLS records as fit, not a record each.
   */
  private send(packet: Buffer): void {
    if (this.closed) return;
    if (!this.corked) {
      this.corked = true;
      this.stream.cork();
      process.nextTick(() => {
        this.corked = false;
        this.stream.uncork();
      });
    }
    this.stream.write(packet);
  }

  /** Reads the host's handshake from `pending` and answers it; false while it has not all arrived (or was refused). */
  private handshake(server: Buffer): boolean {
    if (this.pending.length < MAGIC.length + 2) return false;
    const length = this.pending.readUInt16BE(MAGIC.length);
    if (!this.pending.subarray(0, MAGIC.length).equals(MAGIC) || length > MAX_HANDSHAKE) {
      this.close();
      return false;
    }
    if (this.pending.length < MAGIC.length + 2 + length) return false;
    let request: { type?: unknown; mtu?: unknown };
    try {
      request = JSON.parse(this.pending.subarray(MAGIC.length + 2, MAGIC.length + 2 + length).toString('utf8')) as typeof request;
    } catch {
      this.close();
      return false;
    }
    if (request?.type !== 'clientHandshakeRequest' || typeof request.mtu !== 'number' || !Number.isFinite(request.mtu)) {
      this.close();
      return false;
    }
    this.pending = this.pending.subarray(MAGIC.length + 2 + length);
    this.mtu = Math.min(MAX_MTU, Math.max(MIN_MTU, Math.floor(request.mtu)));
    const body = Buffer.from(JSON.stringify({
      type: 'serverHandshakeResponse',
      clientParameters: { address: this.clientAddress, netmask: 'ffff:ffff:ffff:ffff::', mtu: this.mtu },
      serverAddress: this.serverAddress,
      serverRSDPort: this.options.rsdPort,
    }));
    const header = Buffer.alloc(MAGIC.length + 2);
    MAGIC.copy(header);
    header.writeUInt16BE(body.length, MAGIC.length);
    this.stream.write(Buffer.concat([header, body]));
    this.endpoint = new TcpEndpoint({
      address: server,
      mtu: this.mtu,
      send: (packet) => this.send(packet),
      listener: this.options.listener,
    });
    return true;
  }
}
