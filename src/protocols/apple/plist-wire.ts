import type { Duplex } from 'node:stream';
import { build, parse, parseBinary, type PlistValue } from 'plist';

export type PlistDict = Record<string, unknown>;

/** A plist as a peer sent it: binary (bplist00, what appium-ios-device sends) or XML (what libimobiledevice sends). */
export function decodePlist(bytes: Buffer): PlistDict {
  const value = bytes.subarray(0, 8).toString('latin1') === 'bplist00' ? parseBinary(bytes) : parse(bytes.toString('utf8'));
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error('The plist is not a dictionary.');
  return value as PlistDict;
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
 * length, then the plist. `receive` is called once per whole message, in order.
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
      if (length > 64 * 1024 * 1024) return void this.socket.destroy(new Error('plist frame too large'));
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
