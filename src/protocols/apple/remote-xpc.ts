import type { Duplex } from 'node:stream';
import { readXpcMessage, encodeXpcMessage, XPC_FLAGS, XPC_LIMITS, XPC_WRAPPER_SIZE, type XpcLimits, type XpcMessage, type XpcValue } from './xpc.js';

/**
 * RemoteXPC, the phone's side: XPC messages (xpc.ts) in the DATA frames of an HTTP/2 connection with no HTTP in it
 * (no header is ever sent, HEADERS frames only open streams). A host uses two streams: 1, the ROOT_CHANNEL, on which
 * it sends its requests, and 3, the REPLY_CHANNEL. A message may span DATA frames, and a frame may hold several.
 *
 * The connection opens as go-ios (ios/http, ios/connect.go) and pymobiledevice3 (remotexpc.py) open it: the HTTP/2
 * preface, SETTINGS, WINDOW_UPDATE, HEADERS on 1, an empty dictionary on 1 (flags ALWAYS_SET), HEADERS on 3, a bare
 * message on 3 (ALWAYS_SET | INIT_HANDSHAKE), a bare message on 1 (flags 0x201). go-ios reads one message back on the
 * same stream after each of the three before it sends the next, so each gets its answer; `ready` follows the third,
 * when a service such as RSD may speak first.
 *
 * Bounded: a frame is at most `maxFrame` bytes, a message at most the XPC limits' `maxBytes`, and bytes buffered per
 * stream never exceed one message; anything else ends the connection with GOAWAY.
 */

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const FRAME_HEADER = 9;
export const H2 = { DATA: 0, HEADERS: 1, PRIORITY: 2, RST_STREAM: 3, SETTINGS: 4, PUSH_PROMISE: 5, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 } as const;
const FLAG_ACK = 0x1;
const SETTINGS_MAX_CONCURRENT_STREAMS = 3;
const SETTINGS_INITIAL_WINDOW_SIZE = 4;
/** HTTP/2 error codes for GOAWAY. */
const ERROR = { PROTOCOL: 1, FRAME_SIZE: 6 } as const;

export const ROOT_CHANNEL = 1;
export const REPLY_CHANNEL = 3;
/** What the phone writes in a DATA frame at most: the HTTP/2 default SETTINGS_MAX_FRAME_SIZE, which no host raises. */
const MAX_OUTBOUND_FRAME = 16_384;
/**
 * What the phone reads in one frame at most. go-ios writes each XPC message as one DATA frame whatever its size (its
 * framer does not split), so this is not the 16 KB default but a bound that still stops a 16 MB frame header.
 */
export const MAX_INBOUND_FRAME = 1024 * 1024;
/** The receive window granted back to the host once this many bytes of its DATA were consumed. */
const WINDOW_REFILL = 64 * 1024;
/** The phone's SETTINGS, as remoted sends them. */
const PHONE_SETTINGS: Array<[number, number]> = [
  [SETTINGS_MAX_CONCURRENT_STREAMS, 100],
  [SETTINGS_INITIAL_WINDOW_SIZE, 1048576],
];
const PHONE_WINDOW_INCREMENT = 983041;

export interface RemoteXpcOptions {
  limits?: XpcLimits;
  maxFrame?: number;
  /** Why the connection was ended, for logs and tests. */
  onError?: (error: Error) => void;
}

export type RemoteXpcHandler = (message: XpcMessage & { stream: number }, connection: RemoteXpcConnection) => void;

function frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(FRAME_HEADER);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream & 0x7fffffff, 5);
  return Buffer.concat([head, payload]);
}

/**
 * Bytes that arrive in pieces until a known length is there: kept as the pieces and joined once, so that a peer
 * trickling a 1 MB frame a byte at a time costs 1 MB of copying, not a copy per byte.
 */
class Gather {
  private parts: Buffer[] = [];
  length = 0;
  /** Bytes needed before the next look at them is worth it. */
  private need = 0;
  add(chunk: Buffer): Buffer | undefined {
    this.parts.push(chunk);
    this.length += chunk.length;
    if (this.length < this.need) return undefined;
    const all = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.length);
    this.parts = [];
    this.length = 0;
    return all;
  }
  /** What was left over (copied, so the chunk it came from can be freed), and how long it must grow. */
  keep(rest: Buffer, need: number): void {
    if (rest.length) {
      this.parts = [Buffer.from(rest)];
      this.length = rest.length;
    }
    this.need = need;
  }
}

export class RemoteXpcConnection {
  /** Bytes read but not yet a whole frame (at most one frame header plus `maxFrame`). */
  private readonly pending = new Gather();
  private prefaceSeen = false;
  /** Per stream, bytes of DATA that are not yet a whole XPC message. */
  private readonly streams = new Map<number, Gather>();
  /** Whether the host's first message on the ROOT_CHANNEL (an empty dictionary) came. */
  private sawRoot = false;
  private consumed = 0;
  private readonly nextId = new Map<number, bigint>([
    [ROOT_CHANNEL, 0n],
    [REPLY_CHANNEL, 0n],
  ]);
  private readonly limits: XpcLimits;
  private readonly maxFrame: number;
  private readyCallbacks: Array<() => void> = [];
  private isReady = false;

  constructor(
    private readonly socket: Duplex,
    private readonly handler: RemoteXpcHandler,
    private readonly options: RemoteXpcOptions = {},
  ) {
    this.limits = options.limits ?? XPC_LIMITS;
    this.maxFrame = options.maxFrame ?? MAX_INBOUND_FRAME;
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      try {
        this.receive(chunk);
      } catch (error) {
        this.fail(error instanceof Error ? error : new Error(String(error)), ERROR.PROTOCOL);
      }
    });
    // The server's connection preface: its SETTINGS, then a window for the whole connection.
    const settings = Buffer.alloc(PHONE_SETTINGS.length * 6);
    PHONE_SETTINGS.forEach(([id, value], i) => {
      settings.writeUInt16BE(id, i * 6);
      settings.writeUInt32BE(value, i * 6 + 2);
    });
    const increment = Buffer.alloc(4);
    increment.writeUInt32BE(PHONE_WINDOW_INCREMENT);
    this.write(Buffer.concat([frame(H2.SETTINGS, 0, 0, settings), frame(H2.WINDOW_UPDATE, 0, 0, increment)]));
  }

  get closed(): boolean {
    return this.socket.destroyed;
  }

  /** Runs once the host finished the init handshake (at once if it has). */
  onReady(callback: () => void): void {
    if (this.isReady) callback();
    else this.readyCallbacks.push(callback);
  }

  /** Sends a message on a stream; its id is the stream's next unless given (a reply carries its request's). */
  send(stream: number, message: { flags: number; body?: XpcValue; id?: bigint }): void {
    const id = message.id ?? this.nextId.get(stream) ?? 0n;
    this.nextId.set(stream, id + 1n);
    const bytes = encodeXpcMessage({ flags: message.flags, id, ...(message.body !== undefined ? { body: message.body } : {}) });
    const frames: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += MAX_OUTBOUND_FRAME) frames.push(frame(H2.DATA, 0, stream, bytes.subarray(at, at + MAX_OUTBOUND_FRAME)));
    this.write(Buffer.concat(frames));
  }

  /** A reply to a request on the ROOT_CHANNEL: on the REPLY_CHANNEL, with the request's id, as the phone answers. */
  reply(request: XpcMessage, body: XpcValue): void {
    this.send(REPLY_CHANNEL, { flags: XPC_FLAGS.ALWAYS_SET | XPC_FLAGS.DATA_PRESENT | XPC_FLAGS.REPLY, id: request.id, body });
  }

  close(): void {
    this.socket.end();
  }

  private write(bytes: Buffer): void {
    if (!this.socket.destroyed && this.socket.writable) this.socket.write(bytes);
  }

  private fail(error: Error, code: number): void {
    if (this.socket.destroyed || this.socket.writableEnded) return;
    this.options.onError?.(error);
    const payload = Buffer.alloc(8 + Math.min(error.message.length, 200));
    payload.writeUInt32BE(0, 0);
    payload.writeUInt32BE(code, 4);
    payload.write(error.message.slice(0, 200), 8, 'latin1');
    this.write(frame(H2.GOAWAY, 0, 0, payload));
    // GOAWAY, then a FIN after it, so the host reads why; a host that does not close its side is cut off a second later.
    this.socket.end();
    setTimeout(() => this.socket.destroy(), 1000).unref();
  }

  private receive(chunk: Buffer): void {
    if (this.socket.destroyed || this.socket.writableEnded) return;
    let bytes = this.pending.add(chunk);
    if (!bytes) return;
    if (!this.prefaceSeen) {
      const have = Math.min(bytes.length, PREFACE.length);
      if (!bytes.subarray(0, have).equals(PREFACE.subarray(0, have))) return this.fail(new Error('The peer did not send the HTTP/2 preface.'), ERROR.PROTOCOL);
      if (bytes.length < PREFACE.length) return this.pending.keep(bytes, PREFACE.length);
      bytes = bytes.subarray(PREFACE.length);
      this.prefaceSeen = true;
    }
    while (bytes.length >= FRAME_HEADER && !this.socket.destroyed && !this.socket.writableEnded) {
      const length = bytes.readUIntBE(0, 3);
      if (length > this.maxFrame) return this.fail(new Error(`A frame of ${length} bytes is over ${this.maxFrame}.`), ERROR.FRAME_SIZE);
      if (bytes.length < FRAME_HEADER + length) break;
      const type = bytes[3]!;
      const flags = bytes[4]!;
      const stream = bytes.readUInt32BE(5) & 0x7fffffff;
      const payload = bytes.subarray(FRAME_HEADER, FRAME_HEADER + length);
      bytes = bytes.subarray(FRAME_HEADER + length);
      this.frame(type, flags, stream, payload);
    }
    this.pending.keep(bytes, bytes.length >= FRAME_HEADER ? FRAME_HEADER + bytes.readUIntBE(0, 3) : FRAME_HEADER);
  }

  private frame(type: number, flags: number, stream: number, payload: Buffer): void {
    switch (type) {
      case H2.SETTINGS:
        if (stream !== 0 || payload.length % 6 !== 0) return this.fail(new Error('A malformed SETTINGS frame.'), ERROR.PROTOCOL);
        if (!(flags & FLAG_ACK)) this.write(frame(H2.SETTINGS, FLAG_ACK, 0));
        return;
      case H2.PING:
        if (payload.length !== 8) return this.fail(new Error('A PING frame is 8 bytes.'), ERROR.FRAME_SIZE);
        if (!(flags & FLAG_ACK)) this.write(frame(H2.PING, FLAG_ACK, 0, Buffer.from(payload)));
        return;
      case H2.GOAWAY:
        this.socket.end();
        return;
      case H2.HEADERS:
        // Opens a stream; RemoteXPC's carry no header worth reading.
        return;
      case H2.DATA:
        return this.data(stream, flags, payload);
      case H2.RST_STREAM:
        this.streams.delete(stream);
        return;
      default:
        // WINDOW_UPDATE (the phone's answers are small, far within any window), PRIORITY, CONTINUATION, and
        // frame types HTTP/2 says to ignore when unknown.
        return;
    }
  }

  private data(stream: number, flags: number, payload: Buffer): void {
    if (stream === 0) return this.fail(new Error('DATA on stream 0.'), ERROR.PROTOCOL);
    let body = payload;
    // PADDED: a pad length byte first, the padding last.
    if (flags & 0x8) {
      const pad = payload[0] ?? 0;
      if (payload.length < 1 + pad) return this.fail(new Error('A DATA frame padded beyond its length.'), ERROR.PROTOCOL);
      body = payload.subarray(1, payload.length - pad);
    }
    this.grantWindow(stream, payload.length);
    if (stream !== ROOT_CHANNEL && stream !== REPLY_CHANNEL) return; // file transfer streams: nothing here uses them
    let gather = this.streams.get(stream);
    if (!gather) this.streams.set(stream, (gather = new Gather()));
    let buffered = gather.add(body);
    if (!buffered) return;
    for (;;) {
      // Refuses a declared length over the limit at once, so no stream ever gathers more than one message.
      const read = readXpcMessage(buffered, this.limits);
      if (!read) break;
      buffered = buffered.subarray(read.length);
      this.message({ ...read.message, stream });
      if (this.socket.destroyed || this.socket.writableEnded) return;
    }
    gather.keep(buffered, buffered.length >= XPC_WRAPPER_SIZE ? XPC_WRAPPER_SIZE + Number(buffered.readBigUInt64LE(8)) : XPC_WRAPPER_SIZE);
  }

  /** Gives the host back the window its DATA used, so that a long session never stalls it. */
  private grantWindow(stream: number, length: number): void {
    this.consumed += length;
    if (this.consumed < WINDOW_REFILL) return;
    const increment = Buffer.alloc(4);
    increment.writeUInt32BE(this.consumed);
    this.write(Buffer.concat([frame(H2.WINDOW_UPDATE, 0, 0, increment), frame(H2.WINDOW_UPDATE, 0, stream, increment)]));
    this.consumed = 0;
  }

  private message(message: XpcMessage & { stream: number }): void {
    if (!this.isReady) {
      // The init handshake: each of the host's opening messages is answered in kind on its stream. go-ios sends
      // {} on 1, INIT_HANDSHAKE on 3, 0x201 on 1, each after the answer to the one before; devicectl and
      // pymobiledevice3 send 0x201 before INIT_HANDSHAKE without waiting.
      if (message.stream === REPLY_CHANNEL && message.flags & XPC_FLAGS.INIT_HANDSHAKE) {
        this.send(REPLY_CHANNEL, { flags: XPC_FLAGS.ALWAYS_SET | XPC_FLAGS.INIT_HANDSHAKE });
        return;
      }
      if (message.stream === ROOT_CHANNEL && this.sawRoot && message.flags === 0x201 && message.body === undefined) {
        this.send(ROOT_CHANNEL, { flags: 0x201 });
        this.isReady = true;
        for (const callback of this.readyCallbacks.splice(0)) callback();
        return;
      }
      if (message.stream === ROOT_CHANNEL && !this.sawRoot) {
        this.sawRoot = true;
        this.send(ROOT_CHANNEL, { flags: XPC_FLAGS.ALWAYS_SET, body: {} });
        return;
      }
      return this.fail(new Error(`Unexpected message (flags 0x${message.flags.toString(16)}) on stream ${message.stream} during the init handshake.`), ERROR.PROTOCOL);
    }
    if (message.stream === REPLY_CHANNEL && message.flags & XPC_FLAGS.INIT_HANDSHAKE) {
      this.send(REPLY_CHANNEL, { flags: XPC_FLAGS.ALWAYS_SET | XPC_FLAGS.INIT_HANDSHAKE });
      return;
    }
    this.handler(message, this);
  }
}
