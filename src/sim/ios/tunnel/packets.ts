/**
 * The IPv6 and TCP wire formats a CoreDeviceProxy tunnel carries (RFC 8200, RFC 9293): decoding that never throws and
 * never trusts a declared length, and encoding with the TCP checksum over the IPv6 pseudo-header. Only what the phone's
 * side of a tunnel needs: no extension headers (a host's stack sends none for TCP), no IP options, no fragments.
 */

export const IPV6_HEADER_LENGTH = 40;
export const TCP_HEADER_LENGTH = 20;
export const NEXT_HEADER_TCP = 6;

export const TCP_FIN = 0x01;
export const TCP_SYN = 0x02;
export const TCP_RST = 0x04;
export const TCP_PSH = 0x08;
export const TCP_ACK = 0x10;

const OPTION_END = 0;
const OPTION_NOP = 1;
const OPTION_MSS = 2;
const OPTION_WINDOW_SCALE = 3;

export interface Ipv6Packet {
  source: Buffer;
  destination: Buffer;
  nextHeader: number;
  hopLimit: number;
  payload: Buffer;
}

export interface TcpSegment {
  sourcePort: number;
  destinationPort: number;
  seq: number;
  ack: number;
  flags: number;
  window: number;
  /** The Maximum Segment Size option, when the segment carries one (a SYN's). */
  mss?: number;
  /** The Window Scale option (RFC 7323), a shift count, when the segment carries one (a SYN's). */
  windowScale?: number;
  payload: Buffer;
}

/**
 * The length of the IPv6 packet at the front of a byte stream (header and payload, as its header declares), undefined
 * while its header has not all arrived, or `bad` when it is no IPv6 header: the stream's framing is lost.
 */
export function ipv6PacketLength(bytes: Buffer): number | 'bad' | undefined {
  if (bytes.length < IPV6_HEADER_LENGTH) return undefined;
  if (bytes[0]! >> 4 !== 6) return 'bad';
  return IPV6_HEADER_LENGTH + bytes.readUInt16BE(4);
}

/** The header and payload of one complete IPv6 packet, or undefined if it is not one (short, or not version 6). */
export function decodeIpv6(packet: Buffer): Ipv6Packet | undefined {
  if (packet.length < IPV6_HEADER_LENGTH || packet[0]! >> 4 !== 6) return undefined;
  const payloadLength = packet.readUInt16BE(4);
  // A declared length past the bytes that came is a malformed packet, not a reason to wait or allocate.
  if (IPV6_HEADER_LENGTH + payloadLength > packet.length) return undefined;
  return {
    source: packet.subarray(8, 24),
    destination: packet.subarray(24, 40),
    nextHeader: packet[6]!,
    hopLimit: packet[7]!,
    payload: packet.subarray(IPV6_HEADER_LENGTH, IPV6_HEADER_LENGTH + payloadLength),
  };
}

/** An IPv6 packet around `payload` (traffic class and flow label zero). */
export function encodeIpv6(source: Buffer, destination: Buffer, nextHeader: number, payload: Buffer, hopLimit = 64): Buffer {
  const packet = Buffer.allocUnsafe(IPV6_HEADER_LENGTH + payload.length);
  packet.writeUInt32BE(0x60000000, 0);
  packet.writeUInt16BE(payload.length, 4);
  packet[6] = nextHeader;
  packet[7] = hopLimit;
  source.copy(packet, 8);
  destination.copy(packet, 24);
  payload.copy(packet, IPV6_HEADER_LENGTH);
  return packet;
}

/** The Internet checksum (RFC 1071) of the IPv6 pseudo-header (RFC 8200 8.1) and an upper-layer segment. */
export function pseudoHeaderChecksum(source: Buffer, destination: Buffer, nextHeader: number, segment: Buffer): number {
  let sum = 0;
  for (let i = 0; i < 16; i += 2) sum += source.readUInt16BE(i) + destination.readUInt16BE(i);
  sum += (segment.length >>> 16) + (segment.length & 0xffff) + nextHeader;
  const even = segment.length & ~1;
  for (let i = 0; i < even; i += 2) sum += segment.readUInt16BE(i);
  if (segment.length & 1) sum += segment[segment.length - 1]! << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + Math.floor(sum / 0x10000);
  return ~sum & 0xffff;
}

/**
 * A TCP segment from an IPv6 payload, or undefined if it is malformed: shorter than its header, a data offset out of
 * range, or a checksum that does not add up (a sum over a segment with the right checksum in it is zero).
 */
export function decodeTcp(source: Buffer, destination: Buffer, segment: Buffer): TcpSegment | undefined {
  if (segment.length < TCP_HEADER_LENGTH) return undefined;
  const headerLength = (segment[12]! >> 4) * 4;
  if (headerLength < TCP_HEADER_LENGTH || headerLength > segment.length) return undefined;
  if (pseudoHeaderChecksum(source, destination, NEXT_HEADER_TCP, segment) !== 0) return undefined;
  const decoded: TcpSegment = {
    sourcePort: segment.readUInt16BE(0),
    destinationPort: segment.readUInt16BE(2),
    seq: segment.readUInt32BE(4),
    ack: segment.readUInt32BE(8),
    flags: segment[13]! & 0x3f,
    window: segment.readUInt16BE(14),
    payload: segment.subarray(headerLength),
  };
  // Options: kind, length, value; NOP and END are one byte. A length that runs past the header ends the walk.
  for (let i = TCP_HEADER_LENGTH; i < headerLength; ) {
    const kind = segment[i]!;
    if (kind === OPTION_END) break;
    if (kind === OPTION_NOP) {
      i++;
      continue;
    }
    if (i + 1 >= headerLength) break;
    const length = segment[i + 1]!;
    if (length < 2 || i + length > headerLength) break;
    if (kind === OPTION_MSS && length === 4) decoded.mss = segment.readUInt16BE(i + 2);
    // A shift over 14 is taken as 14 (RFC 7323 2.3).
    if (kind === OPTION_WINDOW_SCALE && length === 3) decoded.windowScale = Math.min(14, segment[i + 2]!);
    i += length;
  }
  return decoded;
}

/** A TCP segment with its checksum, carrying MSS and Window Scale options when given (a SYN-ACK's). */
export function encodeTcp(source: Buffer, destination: Buffer, segment: TcpSegment): Buffer {
  const optionsLength = (segment.mss !== undefined ? 4 : 0) + (segment.windowScale !== undefined ? 4 : 0);
  const headerLength = TCP_HEADER_LENGTH + optionsLength;
  const bytes = Buffer.alloc(headerLength + segment.payload.length);
  bytes.writeUInt16BE(segment.sourcePort, 0);
  bytes.writeUInt16BE(segment.destinationPort, 2);
  bytes.writeUInt32BE(segment.seq >>> 0, 4);
  bytes.writeUInt32BE(segment.ack >>> 0, 8);
  bytes[12] = (headerLength / 4) << 4;
  bytes[13] = segment.flags;
  bytes.writeUInt16BE(segment.window, 14);
  let at = TCP_HEADER_LENGTH;
  if (segment.mss !== undefined) {
    bytes[at] = OPTION_MSS;
    bytes[at + 1] = 4;
    bytes.writeUInt16BE(segment.mss, at + 2);
    at += 4;
  }
  if (segment.windowScale !== undefined) {
    // NOP first, so that the option ends on a 4-byte boundary.
    bytes[at] = OPTION_NOP;
    bytes[at + 1] = OPTION_WINDOW_SCALE;
    bytes[at + 2] = 3;
    bytes[at + 3] = segment.windowScale;
  }
  segment.payload.copy(bytes, headerLength);
  bytes.writeUInt16BE(pseudoHeaderChecksum(source, destination, NEXT_HEADER_TCP, bytes), 16);
  return bytes;
}

/** An IPv6 address's 16 bytes from its text (full or with one `::`), or undefined if it is not one. */
export function parseIpv6Address(text: string): Buffer | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  const bytes = Buffer.alloc(16);
  for (const [i, group] of all.entries()) {
    if (!/^[0-9a-f]{1,4}$/i.test(group)) return undefined;
    bytes.writeUInt16BE(parseInt(group, 16), i * 2);
  }
  return bytes;
}

/** An IPv6 address as text, with the longest run of zero groups as `::` (RFC 5952). */
export function formatIpv6Address(bytes: Buffer): string {
  const groups = Array.from({ length: 8 }, (_, i) => bytes.readUInt16BE(i * 2));
  let best = { at: -1, length: 1 };
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.length) best = { at: i, length: j - i };
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.at < 0) return hex.join(':');
  return `${hex.slice(0, best.at).join(':')}::${hex.slice(best.at + best.length).join(':')}`;
}
