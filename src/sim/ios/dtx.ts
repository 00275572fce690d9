import type { Duplex } from 'node:stream';
import { archive, NSError, unarchive } from './nskeyed.js';

/**
 * DTX, the message protocol of Xcode's developer services (instruments' remote server, testmanagerd), as the phone
 * speaks it. A message is a 32-byte header (magic, header length, fragment index and count, payload length,
 * identifier, conversation index, channel, expects-reply), then a 16-byte payload header (message type, auxiliary
 * length, total length), the auxiliary (a "primitive dictionary" of arguments) and the payload (an NSKeyedArchiver
 * archive: the selector of a call, the object of a reply). A peer opens channels by code on channel 0 with
 * `_requestChannelWithCode:identifier:`; what the other side sends on a channel it did not open carries the negated
 * code. A reply has the call's identifier and conversation index + 1.
 */

const MAGIC = 0x1f3d5b79;
const HEADER = 32;
const PAYLOAD_HEADER = 16;
const AUX_MAGIC = 0x1f0;
/** Every auxiliary entry is a key/value pair; its key is always the "null" type, 10. */
const AUX_NULL_KEY = 10;
const AUX = { STRING: 1, OBJECT: 2, U32: 3, U64: 4, I64: 6 } as const;
/**
 * A message's most, fragments joined (a screenshot from instruments is a few MB), and the most messages being
 * reassembled at once: a peer's header cannot make the phone buffer 4 GB, nor its fragments open without end.
 */
export const DTX_MAX_MESSAGE = 64 * 1024 * 1024;
const DTX_MAX_PARTIAL = 16;

/** Message types of the payload header: a call wanting an object back, a reply with an object, an error. */
export const DTX_TYPE = { ACK: 0, CALL: 2, OBJECT: 3, ERROR: 4 } as const;

/**
 * An object archived already, for classes nskeyed.ts has no JavaScript shape for (XCTCapabilities): sent as these
 * bytes where an object would be archived.
 */
export class Archived {
  constructor(readonly bytes: Buffer) {}
}

/** An auxiliary argument: an archived object, or a typed integer where the protocol wants one. */
export type AuxValue = { u32: number } | { i64: number } | { object: unknown };

export interface DtxMessage {
  identifier: number;
  conversationIndex: number;
  /** As on the wire: a negated code reads as 2^32 - code. */
  channel: number;
  expectsReply: boolean;
  type: number;
  /** The arguments, decoded: archived objects unarchived, integers as numbers. */
  aux: unknown[];
  /** The payload, unarchived (a call's selector, a reply's object); undefined when empty. */
  payload: unknown;
}

export function encodeDtx(message: {
  identifier: number;
  conversationIndex?: number;
  channel: number;
  expectsReply?: boolean;
  type: number;
  aux?: AuxValue[];
  payload?: unknown;
}): Buffer {
  const entries: Buffer[] = [];
  for (const value of message.aux ?? []) {
    const head = Buffer.alloc(8);
    head.writeUInt32LE(AUX_NULL_KEY, 0);
    if ('u32' in value) {
      head.writeUInt32LE(AUX.U32, 4);
      const body = Buffer.alloc(4);
      body.writeUInt32LE(value.u32 >>> 0);
      entries.push(head, body);
    } else if ('i64' in value) {
      head.writeUInt32LE(AUX.I64, 4);
      const body = Buffer.alloc(8);
      body.writeBigInt64LE(BigInt(value.i64));
      entries.push(head, body);
    } else {
      head.writeUInt32LE(AUX.OBJECT, 4);
      const archived = value.object instanceof Archived ? value.object.bytes : archive(value.object);
      const length = Buffer.alloc(4);
      length.writeUInt32LE(archived.length);
      entries.push(head, length, archived);
    }
  }
  const auxBody = Buffer.concat(entries);
  let aux = Buffer.alloc(0);
  if (auxBody.length) {
    aux = Buffer.alloc(16);
    aux.writeUInt32LE(AUX_MAGIC, 0);
    aux.writeBigUInt64LE(BigInt(auxBody.length), 8);
    aux = Buffer.concat([aux, auxBody]);
  }
  const object = message.payload === undefined ? Buffer.alloc(0) : message.payload instanceof Archived ? message.payload.bytes : archive(message.payload);
  const payloadHeader = Buffer.alloc(PAYLOAD_HEADER);
  payloadHeader.writeUInt32LE(message.type, 0);
  payloadHeader.writeUInt32LE(aux.length, 4);
  payloadHeader.writeBigUInt64LE(BigInt(aux.length + object.length), 8);
  const header = Buffer.alloc(HEADER);
  header.writeUInt32LE(MAGIC, 0);
  header.writeUInt32LE(HEADER, 4);
  header.writeUInt16LE(0, 8);
  header.writeUInt16LE(1, 10);
  header.writeUInt32LE(PAYLOAD_HEADER + aux.length + object.length, 12);
  header.writeUInt32LE(message.identifier, 16);
  header.writeUInt32LE(message.conversationIndex ?? 0, 20);
  header.writeUInt32LE(message.channel >>> 0, 24);
  header.writeUInt32LE(message.expectsReply ? 1 : 0, 28);
  return Buffer.concat([header, payloadHeader, aux, object]);
}

function decodeAux(aux: Buffer): unknown[] {
  const values: unknown[] = [];
  if (aux.length < 16) return values;
  const end = 16 + Number(aux.readBigUInt64LE(8));
  let at = 16;
  while (at + 8 <= Math.min(end, aux.length)) {
    at += 4; // the null key
    const type = aux.readUInt32LE(at);
    at += 4;
    switch (type) {
      case AUX.STRING:
      case AUX.OBJECT: {
        const length = aux.readUInt32LE(at);
        const bytes = aux.subarray(at + 4, at + 4 + length);
        at += 4 + length;
        values.push(type === AUX.OBJECT ? unarchive(bytes) : bytes.toString('utf8'));
        break;
      }
      case AUX.U32:
        values.push(aux.readUInt32LE(at));
        at += 4;
        break;
      case AUX.U64:
        values.push(Number(aux.readBigUInt64LE(at)));
        at += 8;
        break;
      case AUX.I64:
        values.push(Number(aux.readBigInt64LE(at)));
        at += 8;
        break;
      default:
        throw new Error(`Unknown DTX auxiliary type ${type}`);
    }
  }
  return values;
}

function decodeMessage(header: Buffer, payload: Buffer): DtxMessage {
  const message: DtxMessage = {
    identifier: header.readUInt32LE(16),
    conversationIndex: header.readUInt32LE(20),
    channel: header.readUInt32LE(24),
    expectsReply: header.readUInt32LE(28) !== 0,
    type: DTX_TYPE.ACK,
    aux: [],
    payload: undefined,
  };
  if (payload.length < PAYLOAD_HEADER) return message;
  message.type = payload.readUInt32LE(0);
  const auxLength = payload.readUInt32LE(4);
  const total = Number(payload.readBigUInt64LE(8));
  message.aux = decodeAux(payload.subarray(PAYLOAD_HEADER, PAYLOAD_HEADER + auxLength));
  const object = payload.subarray(PAYLOAD_HEADER + auxLength, PAYLOAD_HEADER + total);
  if (object.length) message.payload = unarchive(object);
  return message;
}

/** Reassembles messages from a byte stream, fragments included (the first fragment is a bare header). */
export class DtxReader {
  private pending: Buffer = Buffer.alloc(0);
  /** Chunks not yet joined: a message arriving in many pieces is joined once it is whole, not at every piece. */
  private unjoined: Buffer[] = [];
  private unjoinedLength = 0;
  private need = 0;
  private readonly fragments = new Map<number, { header: Buffer; parts: Buffer[]; length: number }>();

  push(chunk: Buffer): DtxMessage[] {
    this.unjoined.push(chunk);
    this.unjoinedLength += chunk.length;
    if (this.pending.length + this.unjoinedLength < this.need) return [];
    this.pending = Buffer.concat([this.pending, ...this.unjoined]);
    this.unjoined = [];
    this.unjoinedLength = 0;
    this.need = 0;
    const out: DtxMessage[] = [];
    while (this.pending.length >= HEADER) {
      if (this.pending.readUInt32LE(0) !== MAGIC) throw new Error('Not a DTX message (bad magic).');
      const header = this.pending.subarray(0, HEADER);
      const fragment = header.readUInt16LE(8);
      const count = header.readUInt16LE(10);
      const identifier = header.readUInt32LE(16);
      // A multi-fragment message's first fragment is a header alone, announcing the whole payload's length.
      const bodyLength = count > 1 && fragment === 0 ? 0 : header.readUInt32LE(12);
      if (header.readUInt32LE(12) > DTX_MAX_MESSAGE) throw new Error(`A DTX message of ${header.readUInt32LE(12)} bytes is over ${DTX_MAX_MESSAGE}.`);
      if (this.pending.length < HEADER + bodyLength) {
        this.need = HEADER + bodyLength;
        break;
      }
      const body = this.pending.subarray(HEADER, HEADER + bodyLength);
      this.pending = this.pending.subarray(HEADER + bodyLength);
      if (count <= 1) {
        out.push(decodeMessage(header, body));
        continue;
      }
      if (fragment === 0) {
        if (this.fragments.size >= DTX_MAX_PARTIAL) throw new Error(`More than ${DTX_MAX_PARTIAL} fragmented DTX messages at once.`);
        this.fragments.set(identifier, { header: Buffer.from(header), parts: [], length: 0 });
        continue;
      }
      const whole = this.fragments.get(identifier);
      if (!whole) continue;
      whole.parts.push(Buffer.from(body));
      whole.length += body.length;
      if (whole.length > DTX_MAX_MESSAGE) throw new Error(`A fragmented DTX message is over ${DTX_MAX_MESSAGE} bytes.`);
      if (fragment === count - 1) {
        this.fragments.delete(identifier);
        out.push(decodeMessage(whole.header, Buffer.concat(whole.parts)));
      }
    }
    return out;
  }
}

/** What a service answers a call with: a value (archived into the reply), nothing, or an error. */
export type DtxAnswer = unknown;
export type DtxHandler = (channel: string, selector: string, args: unknown[], connection: DtxConnection) => DtxAnswer | Promise<DtxAnswer>;

/**
 * One DTX connection, the service side: keeps the channels the host opened, hands each call to the service with the
 * channel's identifier, and replies when the host waits for one (an NSError becomes an error reply).
 */
export class DtxConnection {
  private readonly channels = new Map<number, string>([[0, '']]);
  private readonly reader = new DtxReader();
  private nextIdentifier = 1;

  constructor(
    private readonly stream: Duplex,
    private readonly handle: DtxHandler,
    private readonly onMessage: (selector: string, channel: string) => void = () => undefined,
  ) {
    stream.on('data', (chunk: Buffer) => {
      let messages: DtxMessage[];
      try {
        messages = this.reader.push(chunk);
      } catch {
        stream.destroy();
        return;
      }
      for (const message of messages) void this.receive(message);
    });
    // Every DTX peer starts by publishing what it offers; hosts that do not care ignore it.
    this.send(0, '_notifyOfPublishedCapabilities:', [{ object: { 'com.apple.private.DTXConnection': 1, 'com.apple.private.DTXBlockCompression': 0 } }], false);
  }

  get closed(): boolean {
    return this.stream.destroyed;
  }

  /** A call from the phone's side on a channel the host opened (its code negated), or on channel 0. */
  send(code: number, selector: string, aux: AuxValue[] = [], expectsReply = true): void {
    if (this.stream.destroyed) return;
    this.stream.write(encodeDtx({ identifier: this.nextIdentifier++, channel: code === 0 ? 0 : -code, expectsReply, type: DTX_TYPE.CALL, aux, payload: selector }));
  }

  /**
   * Opens a channel from the phone's side (testmanagerd does for a test runner's XCTestDriverInterface) and sends a
   * call on it: the phone's own channels carry their code as is, where replies to the host's are negated.
   */
  requestChannel(code: number, identifier: string): void {
    this.send(0, '_requestChannelWithCode:identifier:', [{ u32: code }, { object: identifier }]);
  }

  sendOnOwnChannel(code: number, selector: string, aux: AuxValue[] = [], expectsReply = true): void {
    if (this.stream.destroyed) return;
    this.stream.write(encodeDtx({ identifier: this.nextIdentifier++, channel: code, expectsReply, type: DTX_TYPE.CALL, aux, payload: selector }));
  }

  /** The code under which the host opened a channel, for calls back on it. */
  codeOf(identifier: string): number | undefined {
    for (const [code, name] of this.channels) if (name === identifier) return code;
    return undefined;
  }

  private async receive(message: DtxMessage): Promise<void> {
    // Replies to what this side sent (acknowledgements) need nothing.
    if (message.conversationIndex > 0) return;
    const selector = typeof message.payload === 'string' ? message.payload : '';
    // A code above 2^31 is negated: the host calling on the reverse of a channel it opened.
    const code = message.channel > 0x7fffffff ? 0x100000000 - message.channel : message.channel;
    let answer: DtxAnswer;
    if (code === 0 && selector === '_requestChannelWithCode:identifier:') {
      const [requested, identifier] = message.aux;
      this.channels.set(Number(requested), String(identifier));
      this.onMessage(selector, String(identifier));
      answer = undefined;
    } else {
      const channel = this.channels.get(code);
      this.onMessage(selector, channel ?? `#${code}`);
      if (channel === undefined) answer = new NSError('DTXMessage', 1, `No channel with code ${code}.`);
      else {
        try {
          answer = await this.handle(channel, selector, message.aux, this);
        } catch (error) {
          answer = new NSError('DTXMessage', 2, (error as Error).message);
        }
      }
    }
    if (!message.expectsReply || this.stream.destroyed) return;
    const reply = { identifier: message.identifier, conversationIndex: message.conversationIndex + 1, channel: message.channel };
    if (answer instanceof NSError) this.stream.write(encodeDtx({ ...reply, type: DTX_TYPE.ERROR, payload: answer }));
    else if (answer === undefined) this.stream.write(encodeDtx({ ...reply, type: DTX_TYPE.ACK }));
    else this.stream.write(encodeDtx({ ...reply, type: DTX_TYPE.OBJECT, payload: answer }));
  }
}
