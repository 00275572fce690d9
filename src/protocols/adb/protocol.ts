/**
 * Framing of the ADB transport: a 24-byte little-endian header (command, arg0, arg1, payload length,
 * payload checksum, command ^ 0xffffffff) followed by the payload. See AOSP adb/protocol.txt.
 */

export const A_SYNC = 0x434e5953;
export const A_CNXN = 0x4e584e43;
export const A_AUTH = 0x48545541;
export const A_OPEN = 0x4e45504f;
export const A_OKAY = 0x59414b4f;
export const A_CLSE = 0x45534c43;
export const A_WRTE = 0x45545257;
export const A_STLS = 0x534c5453;

/** The original protocol version: every payload carries a byte-sum checksum. */
export const A_VERSION_MIN = 0x01000000;
/** From this version on both peers skip the checksum (adb 1.0.41 offers it). */
export const A_VERSION_SKIP_CHECKSUM = 0x01000001;
/**
 * The original protocol's largest payload, and all a host needs before it is online: adb's CNXN banner and its AUTH
 * packets (a 256-byte signature, a public key of about 720 bytes that adb refuses to send from this size on) fit.
 */
export const MAX_PAYLOAD_V1 = 4 * 1024;

const HEADER_SIZE = 24;
const KNOWN_COMMANDS = new Set([A_SYNC, A_CNXN, A_AUTH, A_OPEN, A_OKAY, A_CLSE, A_WRTE, A_STLS]);

export interface AdbMessage {
  command: number;
  arg0: number;
  arg1: number;
  data: Buffer;
}

export function commandName(command: number): string {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(command >>> 0);
  return b.toString('latin1');
}

export function payloadChecksum(data: Buffer): number {
  let sum = 0;
  for (let i = 0; i < data.length; i++) sum += data[i]!;
  return sum >>> 0;
}

/** The 24-byte header alone: a large payload can then go out as it is, without a copy. */
export function encodeHeader(msg: AdbMessage, withChecksum: boolean): Buffer {
  const out = Buffer.allocUnsafe(HEADER_SIZE);
  out.writeUInt32LE(msg.command >>> 0, 0);
  out.writeUInt32LE(msg.arg0 >>> 0, 4);
  out.writeUInt32LE(msg.arg1 >>> 0, 8);
  out.writeUInt32LE(msg.data.length, 12);
  out.writeUInt32LE(withChecksum ? payloadChecksum(msg.data) : 0, 16);
  out.writeUInt32LE((msg.command ^ 0xffffffff) >>> 0, 20);
  return out;
}

export function encodeMessage(msg: AdbMessage, withChecksum: boolean): Buffer {
  return Buffer.concat([encodeHeader(msg, withChecksum), msg.data]);
}

export class ProtocolError extends Error {}

/**
 * Cuts a TCP byte stream into messages; a bad header is fatal, as adbd drops such a connection. The largest payload
 * and whether a command's checksum counts may change as the connection goes on (a host that signs in may send more).
 */
export class MessageReader {
  private chunks: Buffer[] = [];
  private buffered = 0;

  constructor(
    private readonly maxPayload: number | (() => number),
    private readonly verifyChecksum: (command: number) => boolean,
  ) {}

  push(chunk: Buffer): AdbMessage[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const messages: AdbMessage[] = [];
    for (;;) {
      if (this.buffered < HEADER_SIZE) break;
      const head = this.peek(HEADER_SIZE);
      const command = head.readUInt32LE(0);
      const length = head.readUInt32LE(12);
      if (!KNOWN_COMMANDS.has(command)) throw new ProtocolError(`unknown command 0x${command.toString(16)}`);
      if (head.readUInt32LE(20) !== (command ^ 0xffffffff) >>> 0) throw new ProtocolError('bad magic');
      const max = typeof this.maxPayload === 'number' ? this.maxPayload : this.maxPayload();
      if (length > max) throw new ProtocolError(`payload of ${length} bytes exceeds ${max}`);
      if (this.buffered < HEADER_SIZE + length) break;
      const whole = this.take(HEADER_SIZE + length);
      const data = whole.subarray(HEADER_SIZE);
      if (this.verifyChecksum(command) && payloadChecksum(data) !== head.readUInt32LE(16)) {
        throw new ProtocolError('bad payload checksum');
      }
      messages.push({ command, arg0: head.readUInt32LE(4), arg1: head.readUInt32LE(8), data });
    }
    return messages;
  }

  private peek(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0]!.subarray(0, n);
  }

  private take(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.chunks = [Buffer.concat(this.chunks)];
    const first = this.chunks[0]!;
    const out = first.subarray(0, n);
    if (first.length === n) this.chunks.shift();
    else this.chunks[0] = first.subarray(n);
    this.buffered -= n;
    return out;
  }
}
