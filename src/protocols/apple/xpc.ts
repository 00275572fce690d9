/**
 * XPC's wire format, as RemoteXPC carries it between a host and an iOS 17+ phone (inside HTTP/2 DATA frames, see
 * remote-xpc.ts). A message is a 24-byte wrapper (magic 0x29b00b92, flags, body length, message id), then, when the
 * length is not 0, a body: magic 0x42133742, version 5 and one object, in practice a dictionary. Every object is a
 * 32-bit type, then its payload, padded to 4 bytes; all integers are little-endian.
 *
 * Integers are typed on the wire (int64 and uint64 differ, and peers such as go-ios check which one they got), so
 * they travel here as XpcInt64 / XpcUint64; a plain JavaScript number is a double.
 *
 * Decoding trusts nothing: a message is at most `maxBytes`, objects nest at most `maxDepth` deep, a message holds at
 * most `maxObjects` objects, and no length or count is used before the bytes it claims are there, so a peer's
 * 30-byte message cannot make this allocate more than those bytes. Malformed input is an XpcError.
 */

export const XPC_WRAPPER_MAGIC = 0x29b00b92;
export const XPC_OBJECT_MAGIC = 0x42133742;
const BODY_VERSION = 5;
/** magic, flags, body length (u64), message id (u64). */
export const XPC_WRAPPER_SIZE = 24;

export const XPC_TYPE = {
  NULL: 0x1000,
  BOOL: 0x2000,
  INT64: 0x3000,
  UINT64: 0x4000,
  DOUBLE: 0x5000,
  POINTER: 0x6000,
  DATE: 0x7000,
  DATA: 0x8000,
  STRING: 0x9000,
  UUID: 0xa000,
  FD: 0xb000,
  SHMEM: 0xc000,
  ARRAY: 0xe000,
  DICTIONARY: 0xf000,
  FILE_TRANSFER: 0x1a000,
} as const;

/** The wrapper's flags, by pymobiledevice3's names (go-ios calls WANTING_REPLY "heartbeat request"). */
export const XPC_FLAGS = {
  ALWAYS_SET: 0x1,
  PING: 0x2,
  DATA_PRESENT: 0x100,
  WANTING_REPLY: 0x10000,
  REPLY: 0x20000,
  FILE_TX_STREAM_REQUEST: 0x100000,
  FILE_TX_STREAM_RESPONSE: 0x200000,
  INIT_HANDSHAKE: 0x400000,
} as const;

export class XpcInt64 {
  readonly value: bigint;
  constructor(value: number | bigint) {
    this.value = BigInt.asIntN(64, BigInt(value));
  }
}

export class XpcUint64 {
  readonly value: bigint;
  constructor(value: number | bigint) {
    this.value = BigInt.asUintN(64, BigInt(value));
  }
}

export class XpcUuid {
  /** Lower-case, dashed (8-4-4-4-12). */
  readonly value: string;
  constructor(value: string) {
    const hex = value.replace(/-/g, '').toLowerCase();
    if (!/^[0-9a-f]{32}$/.test(hex)) throw new XpcError(`${value} is not a UUID.`);
    this.value = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }
}

/** Nanoseconds since 1970, as go-ios writes and reads them. */
export class XpcDate {
  constructor(readonly nanoseconds: bigint) {}
}

/** A file descriptor or shared memory that cannot cross a network: kept as what the wire says, never used. */
export class XpcOpaque {
  constructor(
    readonly type: number,
    readonly bytes: Buffer,
  ) {}
}

/** An announced file transfer: its payload follows on its own HTTP/2 stream. */
export class XpcFileTransfer {
  constructor(
    readonly messageId: bigint,
    readonly description: XpcValue,
  ) {}
}

export type XpcValue =
  | null
  | boolean
  | number
  | string
  | Buffer
  | XpcInt64
  | XpcUint64
  | XpcUuid
  | XpcDate
  | XpcOpaque
  | XpcFileTransfer
  | XpcValue[]
  | { [key: string]: XpcValue };

export type XpcDictionary = { [key: string]: XpcValue };

export interface XpcMessage {
  flags: number;
  id: bigint;
  /** Absent when the wrapper's body length is 0 (the handshake's bare messages). */
  body?: XpcValue;
}

export interface XpcLimits {
  /** Bytes of one message, wrapper included. */
  maxBytes: number;
  /** Arrays and dictionaries inside one another, the outermost counted. */
  maxDepth: number;
  /** Objects in one message, every key and value counted. */
  maxObjects: number;
}

/** Far above what CoreDevice sends (a launch request is ~2 KB, a process list of 300 tens of KB). */
export const XPC_LIMITS: XpcLimits = { maxBytes: 4 * 1024 * 1024, maxDepth: 32, maxObjects: 100_000 };

export class XpcError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'XpcError';
  }
}

/** An integer of the message as a JavaScript number (int64, uint64 or a whole double), or undefined. */
export function xpcNumber(value: XpcValue | undefined): number | undefined {
  if (value instanceof XpcInt64 || value instanceof XpcUint64) return Number(value.value);
  if (typeof value === 'number') return value;
  return undefined;
}

export function isXpcDictionary(value: XpcValue | undefined): value is XpcDictionary {
  return (
    !!value &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    !Buffer.isBuffer(value) &&
    Object.getPrototypeOf(value) === Object.prototype
  );
}

// ---- encoding ----

const pad4 = (n: number) => (4 - (n % 4)) % 4;

class Writer {
  private readonly parts: Buffer[] = [];
  length = 0;
  push(bytes: Buffer): void {
    this.parts.push(bytes);
    this.length += bytes.length;
  }
  u32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n >>> 0);
    this.push(b);
  }
  padded(bytes: Buffer): void {
    this.push(bytes);
    if (pad4(bytes.length)) this.push(Buffer.alloc(pad4(bytes.length)));
  }
  concat(): Buffer {
    return Buffer.concat(this.parts, this.length);
  }
}

function encodeObject(w: Writer, value: XpcValue, depth: number): void {
  if (depth > XPC_LIMITS.maxDepth) throw new XpcError('The value nests too deeply to encode.');
  if (value === null || value === undefined) return w.u32(XPC_TYPE.NULL);
  if (typeof value === 'boolean') {
    w.u32(XPC_TYPE.BOOL);
    return w.u32(value ? 1 : 0);
  }
  if (typeof value === 'number') {
    const b = Buffer.alloc(12);
    b.writeUInt32LE(XPC_TYPE.DOUBLE, 0);
    b.writeDoubleLE(value, 4);
    return w.push(b);
  }
  if (typeof value === 'string') {
    const s = Buffer.from(`${value}\0`, 'utf8');
    w.u32(XPC_TYPE.STRING);
    w.u32(s.length);
    return w.padded(s);
  }
  if (Buffer.isBuffer(value)) {
    w.u32(XPC_TYPE.DATA);
    w.u32(value.length);
    return w.padded(value);
  }
  if (value instanceof XpcInt64 || value instanceof XpcUint64 || value instanceof XpcDate) {
    const b = Buffer.alloc(12);
    if (value instanceof XpcInt64) {
      b.writeUInt32LE(XPC_TYPE.INT64, 0);
      b.writeBigInt64LE(value.value, 4);
    } else if (value instanceof XpcUint64) {
      b.writeUInt32LE(XPC_TYPE.UINT64, 0);
      b.writeBigUInt64LE(value.value, 4);
    } else {
      b.writeUInt32LE(XPC_TYPE.DATE, 0);
      b.writeBigInt64LE(value.nanoseconds, 4);
    }
    return w.push(b);
  }
  if (value instanceof XpcUuid) {
    w.u32(XPC_TYPE.UUID);
    return w.push(Buffer.from(value.value.replace(/-/g, ''), 'hex'));
  }
  if (value instanceof XpcOpaque) {
    w.u32(value.type);
    return w.push(value.bytes);
  }
  if (value instanceof XpcFileTransfer) {
    w.u32(XPC_TYPE.FILE_TRANSFER);
    const id = Buffer.alloc(8);
    id.writeBigUInt64LE(value.messageId);
    w.push(id);
    return encodeObject(w, value.description, depth + 1);
  }
  // Arrays and dictionaries: type, the length of what follows (count included), the count, the entries.
  const inner = new Writer();
  if (Array.isArray(value)) {
    inner.u32(value.length);
    for (const item of value) encodeObject(inner, item, depth + 1);
    w.u32(XPC_TYPE.ARRAY);
  } else {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    inner.u32(entries.length);
    for (const [key, item] of entries) {
      if (key.includes('\0')) throw new XpcError('A dictionary key cannot hold NUL.');
      inner.padded(Buffer.from(`${key}\0`, 'utf8'));
      encodeObject(inner, item, depth + 1);
    }
    w.u32(XPC_TYPE.DICTIONARY);
  }
  w.u32(inner.length);
  w.push(inner.concat());
}

export function encodeXpcObject(value: XpcValue): Buffer {
  const w = new Writer();
  encodeObject(w, value, 1);
  return w.concat();
}

/** A whole message: the wrapper, and the body when there is one. */
export function encodeXpcMessage(message: XpcMessage): Buffer {
  const body = message.body === undefined ? Buffer.alloc(0) : encodeXpcObject(message.body);
  const bodyLength = message.body === undefined ? 0 : 8 + body.length;
  const head = Buffer.alloc(XPC_WRAPPER_SIZE + (bodyLength ? 8 : 0));
  head.writeUInt32LE(XPC_WRAPPER_MAGIC, 0);
  head.writeUInt32LE(message.flags >>> 0, 4);
  head.writeBigUInt64LE(BigInt(bodyLength), 8);
  head.writeBigUInt64LE(message.id, 16);
  if (bodyLength) {
    head.writeUInt32LE(XPC_OBJECT_MAGIC, 24);
    head.writeUInt32LE(BODY_VERSION, 28);
  }
  return Buffer.concat([head, body]);
}

// ---- decoding ----

class Reader {
  at = 0;
  objects = 0;
  constructor(
    private readonly bytes: Buffer,
    readonly limits: XpcLimits,
  ) {}
  need(n: number, what: string): void {
    if (n < 0 || this.at + n > this.bytes.length) throw new XpcError(`The XPC object is truncated: ${what} runs past its end.`);
  }
  u32(what: string): number {
    this.need(4, what);
    const n = this.bytes.readUInt32LE(this.at);
    this.at += 4;
    return n;
  }
  take(n: number, what: string): Buffer {
    this.need(n, what);
    const b = this.bytes.subarray(this.at, this.at + n);
    this.at += n;
    return b;
  }
  skipPadding(length: number, what: string): void {
    this.take(pad4(length), what);
  }
  count(): void {
    if (++this.objects > this.limits.maxObjects) throw new XpcError(`The XPC message holds more than ${this.limits.maxObjects} objects.`);
  }
  /** A NUL-terminated string padded to 4 bytes (a dictionary key). */
  cstring(): string {
    const end = this.bytes.indexOf(0, this.at);
    if (end < 0) throw new XpcError('The XPC object is truncated: a dictionary key has no end.');
    const text = this.bytes.subarray(this.at, end).toString('utf8');
    const length = end + 1 - this.at;
    this.at = end + 1;
    this.skipPadding(length, 'a key padding');
    return text;
  }
  get remaining(): number {
    return this.bytes.length - this.at;
  }
}

function decodeObject(r: Reader, depth: number): XpcValue {
  r.count();
  const type = r.u32('a type');
  switch (type) {
    case XPC_TYPE.NULL:
      return null;
    case XPC_TYPE.BOOL:
      return r.u32('a bool') % 256 !== 0;
    case XPC_TYPE.INT64:
      return new XpcInt64(r.take(8, 'an int64').readBigInt64LE());
    case XPC_TYPE.UINT64:
      return new XpcUint64(r.take(8, 'a uint64').readBigUInt64LE());
    case XPC_TYPE.DOUBLE:
      return r.take(8, 'a double').readDoubleLE();
    case XPC_TYPE.DATE:
      return new XpcDate(r.take(8, 'a date').readBigInt64LE());
    case XPC_TYPE.POINTER:
      return new XpcOpaque(type, Buffer.alloc(0));
    case XPC_TYPE.FD:
      return new XpcOpaque(type, Buffer.from(r.take(4, 'a file descriptor')));
    case XPC_TYPE.SHMEM:
      return new XpcOpaque(type, Buffer.from(r.take(8, 'a shared memory')));
    case XPC_TYPE.UUID: {
      const hex = r.take(16, 'a UUID').toString('hex');
      return new XpcUuid(hex);
    }
    case XPC_TYPE.DATA: {
      const length = r.u32('a data length');
      const bytes = Buffer.from(r.take(length, 'a data'));
      r.skipPadding(length, 'a data padding');
      return bytes;
    }
    case XPC_TYPE.STRING: {
      const length = r.u32('a string length');
      const bytes = r.take(length, 'a string');
      r.skipPadding(length, 'a string padding');
      // The length counts the terminating NUL; go-ios trims every NUL, which this does too.
      const nul = bytes.indexOf(0);
      return bytes.subarray(0, nul < 0 ? bytes.length : nul).toString('utf8');
    }
    case XPC_TYPE.FILE_TRANSFER: {
      const id = r.take(8, 'a file transfer id').readBigUInt64LE();
      if (depth > r.limits.maxDepth) throw new XpcError('The XPC message nests too deeply.');
      return new XpcFileTransfer(id, decodeObject(r, depth + 1));
    }
    case XPC_TYPE.ARRAY:
    case XPC_TYPE.DICTIONARY: {
      if (depth > r.limits.maxDepth) throw new XpcError('The XPC message nests too deeply.');
      // The length is not relied on: go-ios writes an array's without its count, Apple with it. It must fit, though.
      const length = r.u32('a container length');
      r.need(length, 'a container');
      const count = r.u32('a container count');
      // Every entry takes at least 4 bytes: a count the bytes cannot hold is refused before anything is allocated.
      if (count * 4 > r.remaining) throw new XpcError(`The XPC container claims ${count} entries in ${r.remaining} bytes.`);
      if (type === XPC_TYPE.ARRAY) {
        const items: XpcValue[] = [];
        for (let i = 0; i < count; i++) items.push(decodeObject(r, depth + 1));
        return items;
      }
      const dict: XpcDictionary = {};
      for (let i = 0; i < count; i++) {
        r.count();
        const key = r.cstring();
        // Own properties only: a peer's "__proto__" key must not reach the prototype.
        Object.defineProperty(dict, key, { value: decodeObject(r, depth + 1), enumerable: true, writable: true, configurable: true });
      }
      return dict;
    }
    default:
      throw new XpcError(`Unknown XPC object type 0x${type.toString(16)}.`);
  }
}

/** One object, which must fill `bytes` exactly. */
export function decodeXpcObject(bytes: Buffer, limits: XpcLimits = XPC_LIMITS): XpcValue {
  if (bytes.length > limits.maxBytes) throw new XpcError(`The XPC object is over ${limits.maxBytes} bytes.`);
  const r = new Reader(bytes, limits);
  const value = decodeObject(r, 1);
  if (r.remaining !== 0) throw new XpcError(`The XPC object is followed by ${r.remaining} stray bytes.`);
  return value;
}

/**
 * The first whole message in `bytes`: the message and the bytes it took, or undefined while it is incomplete. A
 * wrapper that cannot be one (bad magic, over `maxBytes`) is an XpcError at once, before its body has arrived.
 */
export function readXpcMessage(bytes: Buffer, limits: XpcLimits = XPC_LIMITS): { message: XpcMessage; length: number } | undefined {
  if (bytes.length >= 4 && bytes.readUInt32LE(0) !== XPC_WRAPPER_MAGIC) throw new XpcError(`Not an XPC message (magic 0x${bytes.readUInt32LE(0).toString(16)}).`);
  if (bytes.length < XPC_WRAPPER_SIZE) return undefined;
  const flags = bytes.readUInt32LE(4);
  const bodyLength = bytes.readBigUInt64LE(8);
  const id = bytes.readBigUInt64LE(16);
  if (bodyLength > BigInt(limits.maxBytes - XPC_WRAPPER_SIZE)) throw new XpcError(`The XPC message declares ${bodyLength} bytes, over ${limits.maxBytes}.`);
  const length = XPC_WRAPPER_SIZE + Number(bodyLength);
  if (bytes.length < length) return undefined;
  if (bodyLength === 0n) return { message: { flags, id }, length };
  if (bodyLength < 8n) throw new XpcError('The XPC message body is shorter than its header.');
  if (bytes.readUInt32LE(XPC_WRAPPER_SIZE) !== XPC_OBJECT_MAGIC) throw new XpcError('The XPC message body has a bad magic.');
  const version = bytes.readUInt32LE(XPC_WRAPPER_SIZE + 4);
  if (version !== BODY_VERSION) throw new XpcError(`The XPC message body is version ${version}, not ${BODY_VERSION}.`);
  const body = decodeXpcObject(bytes.subarray(XPC_WRAPPER_SIZE + 8, length), limits);
  return { message: { flags, id, body }, length };
}

/** Exactly one whole message. */
export function decodeXpcMessage(bytes: Buffer, limits: XpcLimits = XPC_LIMITS): XpcMessage {
  const read = readXpcMessage(bytes, limits);
  if (!read) throw new XpcError('The XPC message is truncated.');
  if (read.length !== bytes.length) throw new XpcError(`The XPC message is followed by ${bytes.length - read.length} stray bytes.`);
  return read.message;
}
