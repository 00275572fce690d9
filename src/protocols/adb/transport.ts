import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import {
  A_AUTH,
  A_CLSE,
  A_CNXN,
  A_OKAY,
  A_OPEN,
  A_VERSION_SKIP_CHECKSUM,
  A_WRTE,
  encodeHeader,
  encodeMessage,
  MAX_PAYLOAD_V1,
  MessageReader,
  type AdbMessage,
} from './protocol.js';

/** Payloads from this size on go out without being copied into one buffer with their header. */
const LARGE_PAYLOAD = 16 * 1024;
/** Signatures tried on one connection before it is dropped: adb tries each key it has once. */
const MAX_SIGNATURES = 16;

/** What adbd on Android 9+ offers; the host sends at most this much per WRTE to us. */
export const DEVICE_MAX_PAYLOAD = 1024 * 1024;
/**
 * Bytes queued for a host that is not reading before this device stops reading from it (and stops sending WRTEs) until
 * they drain. Before the host is online it has only tokens and a banner to read, so a little is already too much; both
 * are at least a socket's default high-water mark (16 KiB), so that the socket tells when they drain.
 */
const ONLINE_BACKLOG = 2 * DEVICE_MAX_PAYLOAD;
const OFFLINE_BACKLOG = 16 * 1024;

/** The device end of one stream (one OPEN from the host). */
export interface StreamIo {
  /**
   * Queues bytes for the host. A stream has one WRTE in flight and waits for the host's OKAY before the next
   * (the protocol's flow control), so this resolves at once while at most two packets' worth is pending and
   * otherwise once one packet's worth is left. Writing to a closed stream is a no-op, like writing to a socket whose
   * reader has gone.
   */
  write(data: Buffer | string): Promise<void>;
  /** Flushes what is queued, waits for the host to acknowledge it, then sends CLSE. */
  end(): Promise<void>;
  /** Aborted when the host closes the stream or the connection drops. */
  readonly signal: AbortSignal;
}

/** A service's side of a stream: bytes from the host and the host's CLSE. */
export interface ServiceSession {
  /** The OKAY for a host WRTE is sent when this settles, so a slow consumer slows the host down. */
  onData?(data: Buffer): void | Promise<void>;
  onClose?(): void;
}

/**
 * Returns undefined for a service the device does not offer: the host then gets CLSE, as adbd does. A promise defers
 * the OKAY until the service is ready (a relay that must first open the service elsewhere).
 */
export type ServiceOpener = (service: string, io: StreamIo) => ServiceSession | undefined | Promise<ServiceSession | undefined>;

/** AUTH's first argument: what the message carries. */
export const AUTH_TOKEN = 1;
export const AUTH_SIGNATURE = 2;
export const AUTH_RSAPUBLICKEY = 3;
/**
 * Why a stream's signal aborts. One reason for all: abort() without one makes a DOMException with a stack trace for
 * every stream that ends, which a relay opening a stream per adb command pays each time.
 */
const STREAM_CLOSED = Object.freeze(new Error('the adb stream closed'));

/** adbd's token: 20 random bytes, which the host signs as if they were a SHA-1 digest. */
const TOKEN_SIZE = 20;

/** A device that asks the host to prove its key (adbd with ro.adb.secure=1), instead of going online at CNXN. */
export interface DeviceAuth {
  /** Whether the signature over the token is one of the keys this device trusts. */
  verify(token: Buffer, signature: Buffer): boolean;
  /** The host had no trusted key and sent its public key: a phone would ask its user; a refusing device ignores it. */
  onPublicKey?(publicKey: string): void;
}

class Stream implements StreamIo {
  private readonly controller = new AbortController();
  /** Bytes written and not yet sent, oldest first. */
  private readonly queue: Buffer[] = [];
  private queued = 0;
  /** Writers waiting for the queue to shrink to one packet's worth. */
  private blocked: Array<() => void> = [];
  private awaitingOkay = false;
  private pumpScheduled = false;
  private ending = false;
  private endWaiters: Array<() => void> = [];
  private finished = false;
  acknowledged = false;
  session: ServiceSession | undefined;
  inbound: Promise<void> = Promise.resolve();

  constructor(
    readonly localId: number,
    readonly remoteId: number,
    private readonly conn: DeviceConnection,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get closed(): boolean {
    return this.finished;
  }

  write(data: Buffer | string): Promise<void> {
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    if (this.finished || this.ending || buf.length === 0) return Promise.resolve();
    this.queue.push(buf);
    this.queued += buf.length;
    this.schedulePump();
    // Like a socket buffer of two packets: a writer goes on at once while one full packet can wait behind the one in
    // flight, so the next packet is full when the host's OKAY comes, rather than the tail of the last write alone.
    if (this.queued <= 2 * this.conn.outboundMaxPayload) return Promise.resolve();
    return new Promise((resolve) => this.blocked.push(resolve));
  }

  end(): Promise<void> {
    if (this.finished) return Promise.resolve();
    this.ending = true;
    return new Promise((resolve) => {
      this.endWaiters.push(resolve);
      this.schedulePump();
    });
  }

  onOkay(): void {
    this.awaitingOkay = false;
    this.schedulePump();
  }

  /**
   * Packets are cut once per turn of the event loop: bytes that arrive in the same turn as each other (a relay reads
   * a burst as several socket chunks) or as the host's OKAY leave in one packet, instead of the first chunk alone
   * costing a round trip of its own. setImmediate runs after the turn's I/O, so this adds no waiting.
   */
  schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  /** Sends the next packet, as much of the queue as the host accepts in one, once the previous one is acknowledged. */
  private pump(): void {
    if (this.finished || !this.acknowledged || this.awaitingOkay) return;
    if (this.conn.congested()) return this.conn.afterDrain(this);
    if (this.queue.length === 0) {
      if (this.ending) {
        this.conn.send({ command: A_CLSE, arg0: this.localId, arg1: this.remoteId, data: Buffer.alloc(0) });
        this.finish();
      }
      return;
    }
    const limit = this.conn.outboundMaxPayload;
    const parts: Buffer[] = [];
    let size = 0;
    while (this.queue.length > 0 && size < limit) {
      const head = this.queue[0]!;
      const take = Math.min(limit - size, head.length);
      parts.push(take === head.length ? head : head.subarray(0, take));
      if (take === head.length) this.queue.shift();
      else this.queue[0] = head.subarray(take);
      size += take;
    }
    this.queued -= size;
    this.awaitingOkay = true;
    this.conn.send({ command: A_WRTE, arg0: this.localId, arg1: this.remoteId, data: parts.length === 1 ? parts[0]! : Buffer.concat(parts, size) });
    if (this.queued <= limit) this.release();
  }

  private release(): void {
    for (const resolve of this.blocked.splice(0)) resolve();
  }

  /** The stream is gone (CLSE either way, or the transport dropped): release everyone waiting on it. */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.conn.forget(this);
    this.queue.splice(0);
    this.queued = 0;
    this.release();
    for (const waiter of this.endWaiters.splice(0)) waiter();
    this.controller.abort(STREAM_CLOSED);
    this.session?.onClose?.();
  }
}

export interface DeviceConnectionOptions {
  /** The CNXN payload, e.g. `device::ro.product.name=...;ro.product.model=...;ro.product.device=...;features=...`. */
  banner: () => string;
  openService: ServiceOpener;
  onOnline?: () => void;
  log?: (line: string) => void;
  /** Present: the host must sign a token with a trusted key before the device answers CNXN. */
  auth?: DeviceAuth;
  /** Streams open (or opening) at once on this connection; an OPEN past it is answered CLSE without opening anything. */
  maxStreams?: number;
}

/** The device side of one ADB transport over TCP, as adbd runs it after `adb connect`. */
export class DeviceConnection {
  private readonly streams = new Map<number, Stream>();
  private readonly reader: MessageReader;
  /** Messages read but not yet handled while the host is not reading what this device sends. */
  private backlog: AdbMessage[] = [];
  /** Reading is paused here for the backlog (and not by someone else's throttle, which resumes on its own). */
  private held = false;
  /** Streams with a packet to send once the socket drains. */
  private readonly drainWaiters = new Set<Stream>();
  private nextLocalId = 1;
  private version = 0;
  private hostMaxPayload = 4096;
  private online = false;
  private token: Buffer | undefined;
  private signatures = 0;

  constructor(
    private readonly socket: Socket,
    private readonly options: DeviceConnectionOptions,
  ) {
    this.reader = new MessageReader(
      () => (this.online ? DEVICE_MAX_PAYLOAD : MAX_PAYLOAD_V1),
      (command) => this.checksummed(command),
    );
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onBytes(chunk));
    socket.on('drain', () => this.onDrain());
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.dropAll());
  }

  get outboundMaxPayload(): number {
    return Math.min(this.hostMaxPayload, DEVICE_MAX_PAYLOAD);
  }

  close(): void {
    this.socket.destroy();
    this.dropAll();
  }

  send(msg: AdbMessage): void {
    if (this.socket.destroyed) return;
    const withChecksum = !this.online || this.version < A_VERSION_SKIP_CHECKSUM;
    if (msg.data.length < LARGE_PAYLOAD) return void this.socket.write(encodeMessage(msg, withChecksum));
    // One writev for header and payload: a packet of up to 1 MiB is not copied to be framed.
    this.socket.cork();
    this.socket.write(encodeHeader(msg, withChecksum));
    this.socket.write(msg.data);
    this.socket.uncork();
  }

  forget(stream: Stream): void {
    this.streams.delete(stream.localId);
    this.drainWaiters.delete(stream);
  }

  /** Whether the host has left so much unread that this device should wait before reading or sending more. */
  congested(): boolean {
    return this.socket.writableLength > (this.online ? ONLINE_BACKLOG : OFFLINE_BACKLOG);
  }

  afterDrain(stream: Stream): void {
    this.drainWaiters.add(stream);
  }

  /**
   * A host's packets carry a checksum while its side runs the original protocol version: until it has this device's
   * CNXN (adb sends its CNXN and AUTH checksummed), then if either side is older than A_VERSION_SKIP_CHECKSUM. Before
   * sign-in everything is checked, CNXN too; once online a CNXN is the host restarting, whose version is not known yet.
   */
  private checksummed(command: number): boolean {
    if (!this.online) return this.options.auth !== undefined;
    return command !== A_CNXN && this.version < A_VERSION_SKIP_CHECKSUM;
  }

  private onBytes(chunk: Buffer): void {
    try {
      for (const msg of this.reader.push(chunk)) this.backlog.push(msg);
    } catch (err) {
      this.options.log?.(`dropping connection: ${(err as Error).message}`);
      this.close();
      return;
    }
    this.work();
  }

  /**
   * Handles what was read while the host keeps up with what it is sent. A host that sends and never reads (a flood of
   * CNXNs, each answered with a token) is read no further until its socket drains, so that nothing piles up here.
   */
  private work(): void {
    let next = 0;
    while (next < this.backlog.length && !this.socket.destroyed) {
      if (this.congested()) break;
      this.handle(this.backlog[next++]!);
    }
    this.backlog = next === this.backlog.length ? [] : this.backlog.slice(next);
    if (this.backlog.length > 0 && !this.socket.destroyed) {
      this.held = true;
      this.socket.pause();
    }
  }

  private onDrain(): void {
    this.work();
    if (this.held && this.backlog.length === 0) {
      this.held = false;
      this.socket.resume();
    }
    for (const stream of [...this.drainWaiters]) {
      this.drainWaiters.delete(stream);
      stream.schedulePump();
    }
  }

  private handle(msg: AdbMessage): void {
    switch (msg.command) {
      case A_CNXN:
        return this.onConnect(msg);
      case A_AUTH:
        return this.onAuth(msg);
      case A_OPEN:
        return this.onOpen(msg);
      case A_OKAY:
        return this.streams.get(msg.arg1)?.onOkay();
      case A_WRTE:
        return this.onWrite(msg);
      case A_CLSE:
        return this.streams.get(msg.arg1)?.finish();
      default:
        // STLS only answers a request this device never makes.
        return;
    }
  }

  private onConnect(msg: AdbMessage): void {
    // A second CNXN means the host restarted the transport: everything opened before it is void.
    this.dropAll();
    this.online = false;
    this.version = Math.min(msg.arg0, A_VERSION_SKIP_CHECKSUM);
    this.hostMaxPayload = msg.arg1;
    if (this.options.auth) return this.challenge();
    this.goOnline();
  }

  /** A fresh token for the host to sign, as adbd sends after CNXN and after each signature it rejects. */
  private challenge(): void {
    this.token = randomBytes(TOKEN_SIZE);
    this.send({ command: A_AUTH, arg0: AUTH_TOKEN, arg1: 0, data: this.token });
  }

  private onAuth(msg: AdbMessage): void {
    const auth = this.options.auth;
    if (!auth || this.online || !this.token) return;
    if (msg.arg0 === AUTH_SIGNATURE) {
      if (auth.verify(this.token, msg.data)) {
        this.token = undefined;
        return this.goOnline();
      }
      // The host tries each of its keys in turn; a host that keeps signing garbage is cut off rather than served
      // tokens forever.
      if (++this.signatures > MAX_SIGNATURES) return this.close();
      return this.challenge();
    }
    if (msg.arg0 === AUTH_RSAPUBLICKEY) {
      const nul = msg.data.indexOf(0);
      auth.onPublicKey?.(msg.data.subarray(0, nul < 0 ? msg.data.length : nul).toString('utf8'));
    }
  }

  private goOnline(): void {
    const banner = Buffer.from(this.options.banner(), 'utf8');
    this.send({ command: A_CNXN, arg0: this.version, arg1: DEVICE_MAX_PAYLOAD, data: banner });
    this.online = true;
    this.options.onOnline?.();
  }

  private onOpen(msg: AdbMessage): void {
    if (!this.online) return;
    const remoteId = msg.arg0;
    if (this.streams.size >= (this.options.maxStreams ?? Infinity)) {
      return this.send({ command: A_CLSE, arg0: 0, arg1: remoteId, data: Buffer.alloc(0) });
    }
    const nul = msg.data.indexOf(0);
    const service = msg.data.subarray(0, nul < 0 ? msg.data.length : nul).toString('utf8');
    const stream = new Stream(this.nextLocalId++, remoteId, this);
    this.options.log?.(`OPEN ${remoteId} ${JSON.stringify(service)}`);
    this.streams.set(stream.localId, stream);
    let opened: ServiceSession | undefined | Promise<ServiceSession | undefined>;
    try {
      opened = this.options.openService(service, stream);
    } catch (err) {
      this.options.log?.(`service ${service} failed to open: ${(err as Error).message}`);
    }
    if (opened instanceof Promise) {
      opened.then(
        (session) => this.opened(stream, session),
        (err: Error) => {
          this.options.log?.(`service ${service} failed to open: ${err.message}`);
          this.opened(stream, undefined);
        },
      );
      return;
    }
    this.opened(stream, opened);
  }

  private opened(stream: Stream, session: ServiceSession | undefined): void {
    const remoteId = stream.remoteId;
    // The connection dropped (or the host restarted it) while the service was opening.
    if (stream.closed || this.streams.get(stream.localId) !== stream) {
      session?.onClose?.();
      return;
    }
    if (!session) {
      this.streams.delete(stream.localId);
      this.send({ command: A_CLSE, arg0: 0, arg1: remoteId, data: Buffer.alloc(0) });
      return;
    }
    stream.session = session;
    this.send({ command: A_OKAY, arg0: stream.localId, arg1: remoteId, data: Buffer.alloc(0) });
    stream.acknowledged = true;
    stream.schedulePump();
  }

  private onWrite(msg: AdbMessage): void {
    const stream = this.streams.get(msg.arg1);
    if (!stream) return;
    const deliver = async () => {
      try {
        await stream.session?.onData?.(msg.data);
      } catch (err) {
        this.options.log?.(`stream ${stream.localId}: ${(err as Error).message}`);
        await stream.end();
      }
      if (!stream.closed) {
        this.send({ command: A_OKAY, arg0: stream.localId, arg1: stream.remoteId, data: Buffer.alloc(0) });
      }
    };
    stream.inbound = stream.inbound.then(deliver);
  }

  private dropAll(): void {
    for (const stream of [...this.streams.values()]) stream.finish();
  }
}
