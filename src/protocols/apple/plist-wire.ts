import type { Duplex } from 'node:stream';
import { build, parse, type PlistValue } from 'plist';

export type PlistDict = Record<string, unknown>;

/**
 * What one plist from a peer may cost. A binary plist names its objects by index, so one small object can be referred
 * to from many places: decoded naively, 200 bytes of arrays that each refer twice to the level below expand into
 * billions of objects. Every object produced counts, each expansion of a shared one again.
 */
export interface PlistLimits {
  /** Bytes of the encoded plist. */
  maxBytes: number;
  /** Arrays and dictionaries inside one another, the outermost counted. */
  maxDepth: number;
  /** Objects produced: arrays, dictionaries, their keys and values. */
  maxObjects: number;
}

/**
 * Far above what usbmuxd or lockdownd send (a pair record, all of a device's values: tens of KB, under a thousand
 * objects), and cheap to reach: 20,000 objects are a few milliseconds of decoding.
 */
export const PLIST_LIMITS: PlistLimits = { maxBytes: 1024 * 1024, maxDepth: 32, maxObjects: 20_000 };

/** A plist over one of its limits: the peer is not talking the protocol, and is answered with an error and a hang-up. */
export class PlistLimitError extends Error {
  constructor(readonly limit: keyof PlistLimits, value: number) {
    super(`The plist is over its ${limit} of ${value}.`);
    this.name = 'PlistLimitError';
  }
}

/**
 * A plist as a peer sent it: binary (bplist00, what appium-ios-device sends) or XML (what libimobiledevice sends),
 * within `limits`. Data comes as Uint8Array, dates as Date, integers as numbers, as the `plist` package gives them.
 */
export function decodePlist(bytes: Buffer, limits: PlistLimits = PLIST_LIMITS): PlistDict {
  if (bytes.length > limits.maxBytes) throw new PlistLimitError('maxBytes', limits.maxBytes);
  const value = bytes.subarray(0, 6).toString('latin1') === 'bplist' ? decodeBinary(bytes, limits) : decodeXml(bytes, limits);
  if (!value || typeof value !== 'object' || Array.isArray(value) || value instanceof Uint8Array || value instanceof Date) {
    throw new Error('The plist is not a dictionary.');
  }
  return value as PlistDict;
}

/** Seconds between 1970 and 2001, the epoch of a binary plist's dates. */
const EPOCH_2001_MS = 978_307_200_000;

function malformed(what: string): Error {
  return new Error(`The binary plist is malformed: ${what}.`);
}

/**
 * bplist00: a header, the objects, a table of their offsets, and a 32-byte trailer naming the sizes of offsets and of
 * object references, the number of objects, the top one, and where the table starts. Read by hand rather than with
 * `plist`'s parseBinary, which expands shared references without bound and trusts every offset.
 */
function decodeBinary(bytes: Buffer, limits: PlistLimits): unknown {
  if (bytes.subarray(0, 8).toString('latin1') !== 'bplist00') throw malformed('not version 00');
  if (bytes.length < 8 + 1 + 32) throw malformed('too short');
  const end = bytes.length - 32;
  const offsetSize = bytes[end + 6]!;
  const refSize = bytes[end + 7]!;
  if (offsetSize < 1 || offsetSize > 8 || refSize < 1 || refSize > 8) throw malformed('bad trailer');
  const need = (at: number, size: number) => {
    if (at + size > end) throw malformed('an object runs past its end');
  };
  const uint = (at: number, size: number): number => {
    need(at, size);
    let n = 0;
    for (let i = 0; i < size; i++) n = n * 256 + bytes[at + i]!;
    return n;
  };
  const count = bytes.readUInt32BE(end + 12) + bytes.readUInt32BE(end + 8) * 2 ** 32;
  const top = bytes.readUInt32BE(end + 20) + bytes.readUInt32BE(end + 16) * 2 ** 32;
  const table = bytes.readUInt32BE(end + 28) + bytes.readUInt32BE(end + 24) * 2 ** 32;
  if (count < 1 || top >= count || table < 8 || table + count * offsetSize > end) throw malformed('bad trailer');
  const offsetOf = (index: number): number => {
    if (index >= count) throw malformed('a reference to no object');
    const at = uint(table + index * offsetSize, offsetSize);
    if (at < 8 || at >= table) throw malformed('an offset outside the objects');
    return at;
  };
  // Strings are values: one decoded string serves every reference to it, whatever its length.
  const strings = new Map<number, string>();
  let produced = 0;

  const read = (index: number, depth: number): unknown => {
    if (++produced > limits.maxObjects) throw new PlistLimitError('maxObjects', limits.maxObjects);
    let at = offsetOf(index);
    const marker = bytes[at++]!;
    const type = marker >> 4;
    let size = marker & 0xf;
    // Strings, data, arrays and dictionaries of 15 or more carry their length as an int object of its own.
    if (size === 0xf && (type === 0x4 || type === 0x5 || type === 0x6 || type === 0xa || type === 0xd)) {
      const intMarker = uint(at, 1);
      if (intMarker >> 4 !== 0x1 || (intMarker & 0xf) > 3) throw malformed('a bad length');
      const lengthSize = 1 << (intMarker & 0xf);
      size = uint(at + 1, lengthSize);
      at += 1 + lengthSize;
    }
    switch (type) {
      case 0x0:
        if (marker === 0x00) return null;
        if (marker === 0x08) return false;
        if (marker === 0x09) return true;
        throw malformed(`marker 0x${marker.toString(16)}`);
      case 0x1: {
        const n = 1 << size;
        if (n <= 4) return uint(at, n);
        need(at, n);
        // 8 bytes are signed; 16 bytes hold an unsigned 64-bit value in their low half.
        const from = n === 16 ? at + 8 : at;
        if (n === 8) return bytes.readInt32BE(from) * 2 ** 32 + bytes.readUInt32BE(from + 4);
        if (n === 16) return bytes.readUInt32BE(from) * 2 ** 32 + bytes.readUInt32BE(from + 4);
        throw malformed(`a ${n}-byte integer`);
      }
      case 0x2:
        if (size !== 2 && size !== 3) throw malformed(`a ${1 << size}-byte real`);
        need(at, 1 << size);
        return size === 2 ? bytes.readFloatBE(at) : bytes.readDoubleBE(at);
      case 0x3:
        if (marker !== 0x33) throw malformed('a bad date');
        need(at, 8);
        return new Date(bytes.readDoubleBE(at) * 1000 + EPOCH_2001_MS);
      case 0x4:
        need(at, size);
        return new Uint8Array(bytes.buffer, bytes.byteOffset + at, size);
      case 0x5:
      case 0x6: {
        const length = type === 0x5 ? size : size * 2;
        need(at, length);
        let text = strings.get(index);
        if (text === undefined) {
          text = type === 0x5 ? bytes.toString('latin1', at, at + length) : Buffer.from(bytes.subarray(at, at + length)).swap16().toString('utf16le');
          strings.set(index, text);
        }
        return text;
      }
      case 0x8:
        return { UID: uint(at, size + 1) };
      case 0xa:
      case 0xd: {
        if (depth >= limits.maxDepth) throw new PlistLimitError('maxDepth', limits.maxDepth);
        const refs = type === 0xa ? size : size * 2;
        // Refused before any is read: the count alone may be over the limit.
        if (produced + refs > limits.maxObjects) throw new PlistLimitError('maxObjects', limits.maxObjects);
        need(at, refs * refSize);
        const ref = (i: number) => uint(at + i * refSize, refSize);
        if (type === 0xa) {
          const array: unknown[] = [];
          for (let i = 0; i < size; i++) array.push(read(ref(i), depth + 1));
          return array;
        }
        const dict: PlistDict = {};
        for (let i = 0; i < size; i++) {
          const key = read(ref(i), depth + 1);
          if (typeof key !== 'string') throw malformed('a key that is not a string');
          if (key === '__proto__') throw malformed('a __proto__ key');
          dict[key] = read(ref(size + i), depth + 1);
        }
        return dict;
      }
      default:
        throw malformed(`object type 0x${type.toString(16)}`);
    }
  };
  return read(top, 0);
}

/**
 * XML has no shared references, so what it produces grows with its length; only its nesting and element count are
 * checked here, on the text, before `plist` builds anything. Only XML is read (not OpenStep text), and no DTD of its
 * own (entities).
 */
function decodeXml(bytes: Buffer, limits: PlistLimits): unknown {
  const text = bytes.toString('utf8');
  if (!/^\uFEFF?\s*</.test(text)) throw new Error('The plist is neither binary nor XML.');
  if (text.includes('<!ENTITY')) throw new Error('The plist declares entities.');
  let depth = 0;
  let objects = 0;
  for (const [, close, name, selfClosing] of text.matchAll(/<(\/?)([A-Za-z][\w.-]*)[^>]*?(\/?)>/g)) {
    if (close) {
      depth--;
      continue;
    }
    if (name !== 'plist' && name !== 'key' && ++objects > limits.maxObjects) throw new PlistLimitError('maxObjects', limits.maxObjects);
    if (selfClosing) continue;
    // <plist> holds the top object; arrays and dictionaries count from there, as in the binary form.
    if (++depth > limits.maxDepth + 2) throw new PlistLimitError('maxDepth', limits.maxDepth);
  }
  return parse(text);
}

/** Undefined has no plist form: such keys are left out, as a real daemon leaves out what it does not know. */
function clean(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(clean);
  if (value instanceof Uint8Array) return Buffer.from(value);
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => [k, clean(v)]));
  }
  return value;
}

/** Apple's daemons answer in XML plists; both libimobiledevice and appium-ios-device read them. */
export function encodePlist(value: PlistDict): Buffer {
  return Buffer.from(build(clean(value) as PlistValue));
}

/**
 * The framing of lockdownd and of the plist services it starts (installation_proxy and others): a 4-byte big-endian
 * length, then the plist. `receive` is called once per whole message, in order; a frame over PLIST_LIMITS' size, or a
 * plist that does not decode within them, ends the connection.
 */
export class PlistChannel {
  private pending: Buffer = Buffer.alloc(0);
  private socket: Duplex;

  constructor(socket: Duplex, private readonly receive: (message: PlistDict) => void) {
    this.socket = socket;
    this.onData = this.onData.bind(this);
    socket.on('data', this.onData);
  }

  /** Moves the channel onto another stream over the same connection (lockdownd's TLS session). */
  rebind(socket: Duplex): void {
    this.socket.off('data', this.onData);
    this.socket = socket;
    this.pending = Buffer.alloc(0);
    socket.on('data', this.onData);
  }

  /** Stops reading: what follows belongs to someone else (a TLS handshake). */
  detach(): void {
    this.socket.off('data', this.onData);
  }

  send(message: PlistDict): void {
    const body = encodePlist(message);
    const header = Buffer.alloc(4);
    header.writeUInt32BE(body.length, 0);
    if (!this.socket.destroyed) this.socket.write(Buffer.concat([header, body]));
  }

  private onData(chunk: Buffer): void {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    while (this.pending.length >= 4) {
      const length = this.pending.readUInt32BE(0);
      if (length > PLIST_LIMITS.maxBytes) return void this.socket.destroy(new PlistLimitError('maxBytes', PLIST_LIMITS.maxBytes));
      if (this.pending.length < 4 + length) return;
      const body = this.pending.subarray(4, 4 + length);
      this.pending = this.pending.subarray(4 + length);
      let message: PlistDict;
      try {
        message = decodePlist(body);
      } catch {
        this.socket.destroy();
        return;
      }
      this.receive(message);
    }
  }
}
