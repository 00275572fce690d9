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
  return encodeHeaderOf(msg.command, msg.arg0, msg.arg1, msg.data.length, withChecksum ? payloadChecksum(msg.data) : 0);
}

/** The header of a payload that is not in one buffer (it goes out as several, or its checksum is skipped). */
export function encodeHeaderOf(command: number, arg0: number, arg1: number, length: number, checksum: number): Buffer {
  const out = Buffer.allocUnsafe(HEADER_SIZE);
  out.writeUInt32LE(command >>> 0, 0);
  out.writeUInt32LE(arg0 >>> 0, 4);
  out.writeUInt32LE(arg1 >>> 0, 8);
  out.writeUInt32LE(length, 12);
  out.writeUInt32LE(checksum, 16);
  out.writeUInt32LE((command ^ 0xffffffff) >>> 0, 20);
  return out;
}

export function encodeMessage(msg: AdbMessage, withChecksum: boolean): Buffer {
  return Buffer.concat([encodeHeader(msg, withChecksum), msg.data]);
}

export class ProtocolError extends Error {}

/**
 * A message as read off the socket. A large payload arrives as several socket reads: `parts` are those reads as they
 * came (no copy), and `data` joins them only when asked, so a relay that writes the payload on never copies it.
 */
export interface ReceivedMessage extends AdbMessage {
  readonly parts: Buffer[];
}

class Received implements ReceivedMessage {
  private joined: Buffer | undefined;

  constructor(
    readonly command: number,
    readonly arg0: number,
    readonly arg1: number,
    readonly parts: Buffer[],
    private readonly length: number,
  ) {}

  get data(): Buffer {
    if (!this.joined) this.joined = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.length);
    return this.joined;
  }
}

/** Cuts a TCP byte stream into messages; a bad header is fatal, as adbd drops such a connection. */
export class MessageReader {
  private chunks: Buffer[] = [];
  private buffered = 0;

  constructor(
    private readonly maxPayload: number,
    private readonly verifyChecksum: () => boolean,
  ) {}

  push(chunk: Buffer): ReceivedMessage[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const messages: ReceivedMessage[] = [];
    for (;;) {
      if (this.buffered < HEADER_SIZE) break;
      const head = this.peek(HEADER_SIZE);
      const command = head.readUInt32LE(0);
      const length = head.readUInt32LE(12);
      if (!KNOWN_COMMANDS.has(command)) throw new ProtocolError(`unknown command 0x${command.toString(16)}`);
      if (head.readUInt32LE(20) !== (command ^ 0xffffffff) >>> 0) throw new ProtocolError('bad magic');
      if (length > this.maxPayload) throw new ProtocolError(`payload of ${length} bytes exceeds ${this.maxPayload}`);
      if (this.buffered < HEADER_SIZE + length) break;
      this.take(HEADER_SIZE);
      const parts = this.take(length);
      if (this.verifyChecksum() && command !== A_CNXN) {
        let sum = 0;
        for (const part of parts) sum += payloadChecksum(part);
        if (sum >>> 0 !== head.readUInt32LE(16)) throw new ProtocolError('bad payload checksum');
      }
      messages.push(new Received(command, head.readUInt32LE(4), head.readUInt32LE(8), parts, length));
    }
    return messages;
  }

  private peek(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0]!.subarray(0, n);
  }

  /** The next n bytes, as the pieces of the reads they came in (subarrays, not copies). */
  private take(n: number): Buffer[] {
    const parts: Buffer[] = [];
    this.buffered -= n;
    while (n > 0) {
      const first = this.chunks[0]!;
      if (first.length <= n) {
        parts.push(first);
        this.chunks.shift();
        n -= first.length;
      } else {
        parts.push(first.subarray(0, n));
        this.chunks[0] = first.subarray(n);
        n = 0;
      }
    }
    return parts;
  }
}
