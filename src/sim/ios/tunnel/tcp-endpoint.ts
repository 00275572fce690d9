import { Duplex } from 'node:stream';
import {
  IPV6_HEADER_LENGTH, NEXT_HEADER_TCP, TCP_ACK, TCP_FIN, TCP_HEADER_LENGTH, TCP_PSH, TCP_RST, TCP_SYN,
  decodeIpv6, decodeTcp, encodeIpv6, encodeTcp, formatIpv6Address, type TcpSegment,
} from './packets.js';

/** What the phone accepts connections with, by port; undefined for a closed port (answered with a reset). */
export type TcpListener = (port: number) => ((socket: Duplex) => void) | undefined;

export interface TcpEndpointOptions {
  /** The phone's address inside the tunnel: packets to any other are not for it. */
  address: Buffer;
  /** The tunnel's MTU: no packet the phone sends is longer. */
  mtu: number;
  /** Writes one IPv6 packet into the tunnel. */
  send: (packet: Buffer) => void;
  listener: TcpListener;
}

/**
 * Bounds that keep an unauthenticated peer from making the phone hold more than a few megabytes: connections and
 * half-open ones (a SYN flood), and each connection's buffers in both directions.
 */
export const MAX_CONNECTIONS = 128;
export const MAX_HALF_OPEN = 32;
/**
 * The receive window: the most a connection buffers that its reader has not taken. 64 KiB without window scaling;
 * with it (a peer that offers it, as gVisor and every current stack do) 256 KiB, which a shift of 3 can announce, so
 * that a transfer is not held to 64 KiB per round trip through the tunnel.
 */
const RECEIVE_BUFFER = 65535;
const SCALED_RECEIVE_BUFFER = 256 * 1024;
const WINDOW_SHIFT = 3;
/** Written data the phone holds, sent or not, before a writer is asked to wait. */
const SEND_BUFFER = 256 * 1024;
/** The link is reliable, but a peer's stack may still drop a segment it had no room for: resent after this. */
const INITIAL_RTO_MS = 200;
const MAX_RETRANSMISSIONS = 8;

type State = 'syn-received' | 'established' | 'close-wait' | 'fin-wait-1' | 'fin-wait-2' | 'closing' | 'last-ack' | 'closed';

const distance = (from: number, to: number) => (to - from) >>> 0;

/**
 * The TCP side of the phone's tunnel address, in user space: it accepts connections on the ports its listener names
 * and exposes each as a Duplex with backpressure both ways (the receive window shrinks while the reader lags; writes
 * wait while the peer's window and the send buffer are full). Segments follow the peer's window and MSS; data arrives
 * in order on this link, so out-of-order data is dropped with a duplicate ACK and the peer resends it.
 */
export class TcpEndpoint {
  readonly connections = new Map<string, TcpConnection>();
  /** Packets dropped as malformed, not for this address, or over the limits: a hostile peer shows here. */
  dropped = 0;
  private closed = false;

  constructor(readonly options: TcpEndpointOptions) {}

  get halfOpen(): number {
    let n = 0;
    for (const c of this.connections.values()) if (c.state === 'syn-received') n++;
    return n;
  }

  /** Connections that owe the peer an ACK for what the current batch of packets brought. */
  private readonly acksOwed = new Set<TcpConnection>();

  /** One IPv6 packet from the tunnel. Never throws: what is not a TCP segment for this address is dropped. */
  receive(packet: Buffer): void {
    this.receiveAll([packet]);
  }

  /**
   * Packets that arrived together (one read from the tunnel): each connection acknowledges once, after the last of
   * them, as a receiver's stack does with a burst, rather than once a segment.
   */
  receiveAll(packets: Buffer[]): void {
    for (const packet of packets) this.segmentIn(packet);
    for (const connection of this.acksOwed) connection.sendOwedAck();
    this.acksOwed.clear();
  }

  /** @internal */
  oweAck(connection: TcpConnection): void {
    this.acksOwed.add(connection);
  }

  private segmentIn(packet: Buffer): void {
    if (this.closed) return;
    const ip = decodeIpv6(packet);
    if (!ip || ip.nextHeader !== NEXT_HEADER_TCP || !ip.destination.equals(this.options.address)) return void this.dropped++;
    const segment = decodeTcp(ip.source, ip.destination, ip.payload);
    if (!segment) return void this.dropped++;
    const key = `${ip.source.toString('hex')}.${segment.sourcePort}.${segment.destinationPort}`;
    const existing = this.connections.get(key);
    if (existing) return existing.receive(segment);
    if (segment.flags & TCP_RST) return;
    const peer = Buffer.from(ip.source);
    if ((segment.flags & (TCP_SYN | TCP_ACK)) !== TCP_SYN) return this.reset(peer, segment);
    const accept = this.options.listener(segment.destinationPort);
    // A closed port answers with a reset, as a phone's does.
    if (!accept) return this.reset(peer, segment);
    // Over the limits the SYN goes unanswered, as a full backlog does: the peer retries or gives up.
    if (this.connections.size >= MAX_CONNECTIONS || this.halfOpen >= MAX_HALF_OPEN) return void this.dropped++;
    const connection = new TcpConnection(this, key, peer, segment, accept);
    this.connections.set(key, connection);
  }

  /** Ends every connection with a reset (the tunnel is going away) and takes no more packets. */
  close(): void {
    for (const connection of this.connections.values()) connection.abort(true);
    this.connections.clear();
    this.closed = true;
  }

  /** Sends a segment from the phone's address to `peer`. */
  send(peer: Buffer, segment: TcpSegment): void {
    if (this.closed) return;
    this.options.send(encodeIpv6(this.options.address, peer, NEXT_HEADER_TCP, encodeTcp(this.options.address, peer, segment)));
  }

  /** The answer to a segment for no connection (RFC 9293 3.10.7.1). */
  private reset(peer: Buffer, segment: TcpSegment): void {
    const base = { sourcePort: segment.destinationPort, destinationPort: segment.sourcePort, window: 0, payload: Buffer.alloc(0) };
    if (segment.flags & TCP_ACK) return this.send(peer, { ...base, seq: segment.ack, ack: 0, flags: TCP_RST });
    const length = segment.payload.length + (segment.flags & TCP_SYN ? 1 : 0) + (segment.flags & TCP_FIN ? 1 : 0);
    this.send(peer, { ...base, seq: 0, ack: (segment.seq + length) >>> 0, flags: TCP_RST | TCP_ACK });
  }

  /** @internal */
  forget(key: string): void {
    this.connections.delete(key);
  }
}

/** One connection to the phone: a Duplex whose reads are the peer's data and whose writes go to the peer. */
export class TcpConnection extends Duplex {
  state: State = 'syn-received';
  readonly remoteAddress: string;
  readonly remotePort: number;
  readonly localAddress: string;
  readonly localPort: number;
  private readonly iss = Math.floor(Math.random() * 0x100000000) >>> 0;
  private sndUna: number;
  /** The peer's window in bytes, from its last segment, and its MSS (the IPv6 minimum's, 1220, if it sent none). */
  private sndWnd = 0;
  /** Window scale shifts (0 unless both SYNs carried the option): the peer's, and the phone's. */
  private readonly peerShift: number;
  private readonly ownShift: number;
  private readonly receiveBuffer: number;
  private readonly mss: number;
  /** The MSS the phone announces: what its MTU leaves for data. */
  private readonly ownMss: number;
  /** Data written and not yet acknowledged, from sndUna on; `sent` of its bytes are on the wire. */
  private readonly queue: Buffer[] = [];
  private queued = 0;
  private sent = 0;
  private finQueued = false;
  private finSent = false;
  /** Our FIN was sent and acknowledged: nothing more is sent. */
  private finSentDone = false;
  private rcvNxt: number;
  /** The window the phone last advertised: a reader that frees most of it gets a window update. */
  private advertised: number;
  private rto = INITIAL_RTO_MS;
  private retransmissions = 0;
  private timer: NodeJS.Timeout | undefined;
  private waitingWrite: (() => void) | undefined;
  private finalCallback: ((error?: Error | null) => void) | undefined;
  /** Data came in this batch and no segment has acknowledged it yet. */
  private ackOwed = false;

  constructor(
    private readonly endpoint: TcpEndpoint,
    private readonly key: string,
    private readonly peer: Buffer,
    syn: TcpSegment,
    private readonly accept: (socket: Duplex) => void,
  ) {
    // The TCP state decides when the connection is over, not the stream's end and finish: a FIN may still need its ACK.
    const receiveBuffer = syn.windowScale !== undefined ? SCALED_RECEIVE_BUFFER : RECEIVE_BUFFER;
    super({ autoDestroy: false, allowHalfOpen: true, readableHighWaterMark: receiveBuffer });
    this.receiveBuffer = receiveBuffer;
    this.advertised = receiveBuffer;
    this.peerShift = syn.windowScale ?? 0;
    this.ownShift = syn.windowScale !== undefined ? WINDOW_SHIFT : 0;
    this.remoteAddress = formatIpv6Address(peer);
    this.remotePort = syn.sourcePort;
    this.localAddress = formatIpv6Address(endpoint.options.address);
    this.localPort = syn.destinationPort;
    this.rcvNxt = (syn.seq + 1) >>> 0;
    this.sndUna = this.iss;
    // A SYN's window is never scaled.
    this.sndWnd = syn.window;
    this.ownMss = endpoint.options.mtu - IPV6_HEADER_LENGTH - TCP_HEADER_LENGTH;
    this.mss = Math.max(1, Math.min(this.ownMss, syn.mss ?? 1220));
    this.sendSynAck();
  }

  /** The net.Socket calls that servers make on their connections; nothing to tune on this link. */
  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
  setTimeout(): this {
    return this;
  }

  receive(segment: TcpSegment): void {
    if (segment.flags & TCP_RST) {
      // Only a reset inside the window counts (RFC 5961 3): a stray one is ignored.
      if (this.state === 'syn-received' || distance(this.rcvNxt, segment.seq) <= this.receiveWindow()) this.abort(false);
      return;
    }
    if (this.state === 'syn-received') {
      if (segment.flags & TCP_SYN) return this.sendSynAck(); // the peer resent its SYN: our SYN-ACK was lost
      if (!(segment.flags & TCP_ACK) || segment.ack !== ((this.iss + 1) >>> 0)) return this.abort(true);
      this.state = 'established';
      this.sndUna = segment.ack;
      this.sndWnd = segment.window * 2 ** this.peerShift;
      this.retransmissions = 0;
      this.stopTimer();
      this.accept(this);
    } else if (segment.flags & TCP_SYN) {
      return this.sendAck(); // a SYN on an open connection gets a challenge ACK (RFC 5961 4)
    }
    if (segment.flags & TCP_ACK) this.acknowledged(segment);
    if (this.state === 'closed') return;
    if (segment.payload.length > 0 || segment.flags & TCP_FIN) this.data(segment);
    // A keep-alive probe (no data, an old sequence number) gets an ACK (RFC 9293 3.8.4): go-ios's stack probes a
    // connection idle for 30 s every second and ends it after 9 unanswered probes (runwda's, and WDA with it).
    else if (((this.rcvNxt - segment.seq) | 0) > 0) this.sendAck();
  }

  /** Ends the connection now: with a reset to the peer when `tellPeer`, and the stream destroyed. */
  abort(tellPeer: boolean): void {
    if (this.state === 'closed') return;
    if (tellPeer) this.segment(TCP_RST | TCP_ACK, this.sndNxt, Buffer.alloc(0));
    this.closeState();
    this.destroy();
  }

  // ---- Duplex ----

  override _read(): void {
    // The reader took data: if the window has opened by half a buffer since it was last told, tell the peer.
    if (this.state !== 'closed' && this.receiveWindow() - this.advertised >= this.receiveBuffer / 2) this.sendAck();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.state === 'closed' || this.finQueued) return callback(new Error('the connection is closed'));
    this.queue.push(chunk);
    this.queued += chunk.length;
    this.flush();
    if (this.queued < SEND_BUFFER) return callback();
    this.waitingWrite = () => callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (this.state === 'closed') return callback();
    this.finQueued = true;
    this.finalCallback = callback;
    this.flush();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // Destroyed by its user before the TCP close completed: the peer hears a reset, as from a closed socket.
    if (this.state !== 'closed') {
      this.segment(TCP_RST | TCP_ACK, this.sndNxt, Buffer.alloc(0));
      this.closeState();
    }
    callback(error);
  }

  // ---- TCP ----

  private get sndNxt(): number {
    return (this.sndUna + this.sent + (this.finSent ? 1 : 0)) >>> 0;
  }

  private receiveWindow(): number {
    return Math.max(0, this.receiveBuffer - this.readableLength);
  }

  private acknowledged(segment: TcpSegment): void {
    const acked = distance(this.sndUna, segment.ack);
    const inFlight = this.sent + (this.finSent ? 1 : 0);
    // An ACK for what was never sent is ignored (RFC 9293 3.10.7.4); an old one may still carry a new window.
    if (acked > inFlight) return this.sendAck();
    this.sndWnd = segment.window * 2 ** this.peerShift;
    // The peer answers while nothing is in flight (a window probe): it is alive, however long its window stays shut.
    if (acked === 0 && this.sent === 0) this.retransmissions = 0;
    if (acked > 0) {
      const data = Math.min(acked, this.sent);
      this.dropAcknowledged(data);
      this.sndUna = (this.sndUna + acked) >>> 0;
      this.retransmissions = 0;
      this.rto = INITIAL_RTO_MS;
      if (acked > data) this.finAcknowledged();
      if (this.state === 'closed') return;
      if (this.waitingWrite && this.queued < SEND_BUFFER) {
        const resume = this.waitingWrite;
        this.waitingWrite = undefined;
        resume();
      }
    }
    this.flush();
  }

  private finAcknowledged(): void {
    this.finSent = false;
    this.finQueued = false;
    this.finalCallback?.();
    this.finalCallback = undefined;
    // FIN_WAIT_1 -> FIN_WAIT_2; CLOSING and LAST_ACK -> closed (no TIME_WAIT: the peer chooses a new port each time).
    if (this.state === 'fin-wait-1') this.state = 'fin-wait-2';
    else if (this.state === 'closing' || this.state === 'last-ack') this.finish();
    this.finSentDone = true;
  }

  private data(segment: TcpSegment): void {
    const offset = (this.rcvNxt - segment.seq) | 0;
    // Ahead of what is expected: a segment before it was lost on its way. The duplicate ACK says where to resume.
    if (offset < 0) return this.oweAck();
    const payload = offset < segment.payload.length ? segment.payload.subarray(offset) : Buffer.alloc(0);
    const finIsNext = (segment.flags & TCP_FIN) !== 0 && offset <= segment.payload.length;
    const receiving = this.state === 'established' || this.state === 'fin-wait-1' || this.state === 'fin-wait-2';
    if (receiving) {
      // Within the window only: what does not fit is dropped, and the peer resends it once the window opens.
      const taken = payload.subarray(0, this.receiveWindow());
      if (taken.length > 0) {
        this.rcvNxt = (this.rcvNxt + taken.length) >>> 0;
        this.push(Buffer.from(taken));
      }
      if (finIsNext && taken.length === payload.length) {
        this.rcvNxt = (this.rcvNxt + 1) >>> 0;
        this.push(null);
        if (this.state === 'established') this.state = 'close-wait';
        else if (this.state === 'fin-wait-1') this.state = 'closing';
        else {
          this.sendAck();
          return this.finish();
        }
      }
    }
    this.oweAck();
  }

  private oweAck(): void {
    this.ackOwed = true;
    this.endpoint.oweAck(this);
  }

  /** @internal The ACK for data received in this batch, unless a segment sent since has carried it. */
  sendOwedAck(): void {
    if (this.state !== 'closed' && this.ackOwed) this.sendAck();
  }

  /** Sends what the peer's window and the MSS allow, then the FIN once all data is out. */
  private flush(): void {
    if (this.state === 'syn-received' || this.state === 'closed' || this.finSentDone) return;
    while (this.sent < this.queued) {
      const usable = this.sndWnd - this.sent;
      if (usable <= 0) break;
      const length = Math.min(this.queued - this.sent, usable, this.mss);
      const seq = (this.sndUna + this.sent) >>> 0;
      const data = this.slice(this.sent, length);
      this.sent += length;
      this.segment(TCP_ACK | (this.sent === this.queued ? TCP_PSH : 0), seq, data);
    }
    if (this.finQueued && !this.finSent && this.sent === this.queued) {
      this.segment(TCP_FIN | TCP_ACK, (this.sndUna + this.sent) >>> 0, Buffer.alloc(0));
      this.finSent = true;
      if (this.state === 'established') this.state = 'fin-wait-1';
      else if (this.state === 'close-wait') this.state = 'last-ack';
    }
    // Something unacknowledged, or data waiting on a closed window (probed on the same timer): keep the timer going.
    if (this.sent > 0 || this.finSent || this.sent < this.queued) this.startTimer();
    else this.stopTimer();
  }

  private startTimer(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => this.timedOut(), this.rto);
    this.timer.unref();
  }

  private stopTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private timedOut(): void {
    this.timer = undefined;
    if (this.state === 'closed') return;
    if (++this.retransmissions > MAX_RETRANSMISSIONS) return this.abort(true);
    this.rto = Math.min(this.rto * 2, 5000);
    if (this.state === 'syn-received') {
      this.sendSynAck();
      return;
    }
    if (this.sent === 0 && !this.finSent && this.sndWnd <= 0) {
      // A zero window: an old sequence number makes the peer answer with its window now.
      this.segment(TCP_ACK, (this.sndUna - 1) >>> 0, Buffer.alloc(0));
      this.startTimer();
      return;
    }
    // Go back to the first unacknowledged byte and send again.
    this.sent = 0;
    this.finSent = false;
    this.flush();
    // A window that has closed since holds nothing back from the first segment: the peer must see the loss repaired.
    if (this.sent === 0 && this.queued > 0) this.segment(TCP_ACK, this.sndUna, this.slice(0, Math.min(this.queued, this.mss)));
    this.startTimer();
  }

  private sendSynAck(): void {
    this.endpoint.send(this.peer, {
      sourcePort: this.localPort, destinationPort: this.remotePort, seq: this.iss, ack: this.rcvNxt,
      flags: TCP_SYN | TCP_ACK, window: Math.min(0xffff, this.receiveWindow()), mss: this.ownMss, payload: Buffer.alloc(0),
      ...(this.ownShift ? { windowScale: this.ownShift } : {}),
    });
    this.startTimer();
  }

  private sendAck(): void {
    this.segment(TCP_ACK, this.sndNxt, Buffer.alloc(0));
  }

  private segment(flags: number, seq: number, payload: Buffer): void {
    this.ackOwed = false;
    const window = Math.min(0xffff, Math.floor(this.receiveWindow() / 2 ** this.ownShift));
    this.advertised = window * 2 ** this.ownShift;
    this.endpoint.send(this.peer, { sourcePort: this.localPort, destinationPort: this.remotePort, seq, ack: this.rcvNxt, flags, window, payload });
  }

  /** `length` bytes of the queue from `offset` on. */
  private slice(offset: number, length: number): Buffer {
    const parts: Buffer[] = [];
    for (const chunk of this.queue) {
      if (length <= 0) break;
      if (offset >= chunk.length) {
        offset -= chunk.length;
        continue;
      }
      const part = chunk.subarray(offset, offset + length);
      parts.push(part);
      length -= part.length;
      offset = 0;
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  /** Drops `length` acknowledged bytes from the front of the queue. */
  private dropAcknowledged(length: number): void {
    this.queued -= length;
    this.sent -= length;
    while (length > 0) {
      const head = this.queue[0]!;
      if (head.length <= length) {
        this.queue.shift();
        length -= head.length;
      } else {
        this.queue[0] = head.subarray(length);
        length = 0;
      }
    }
  }

  /** Both sides have closed: the connection is gone, and its stream closes once its reader has taken all it got. */
  private finish(): void {
    this.closeState();
    if (this.readableEnded) this.destroy();
    else this.once('end', () => this.destroy());
  }

  private closeState(): void {
    this.state = 'closed';
    this.stopTimer();
    this.queue.length = 0;
    this.queued = 0;
    this.sent = 0;
    this.endpoint.forget(this.key);
    this.waitingWrite = undefined;
  }
}
