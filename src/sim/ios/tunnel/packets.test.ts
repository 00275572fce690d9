import { describe, expect, it } from 'vitest';
import {
  TCP_ACK, TCP_PSH, TCP_SYN, decodeIpv6, decodeTcp, encodeIpv6, encodeTcp, formatIpv6Address, ipv6PacketLength,
  parseIpv6Address, pseudoHeaderChecksum,
} from './packets.js';

/**
 * Packets captured from go-ios 1.2.0's userspace tunnel (gVisor's netstack) to a simulated 17.5 phone and back: the
 * host's SYN (MSS 1220, SACK permitted, timestamps, window scale 7), the phone's SYN-ACK (MSS 1220), and the host's
 * first data segment (an HTTP request).
 */
const HOST_SYN = Buffer.from(
  '6000000000280640fd7c7093360600000000000000000002fd7c7093360600000000000000000001' +
    'c17d1fa4471f888e00000000a0025f0070d30000020404c40101080a6f11140d0000000001030307',
  'hex',
);
const PHONE_SYN_ACK = Buffer.from(
  '6000000000180640fd7c7093360600000000000000000001fd7c70933606000000000000000000021fa4c17dbe6588b5471f888f6012ffff58eb0000020404c4',
  'hex',
);
const HOST_DATA = Buffer.from(
  '6000000000480640fd7c7093360600000000000000000002fd7c7093360600000000000000000001c17d1fa4471f888fbe6588b65018ffff96080000' +
    '474554202f73746174757320485454502f312e310d0a486f73743a20780d0a436f6e6e656374696f6e3a20636c6f73650d0a0d0a',
  'hex',
);
const HOST = parseIpv6Address('fd7c:7093:3606::2')!;
const PHONE = parseIpv6Address('fd7c:7093:3606::1')!;

describe('IPv6 and TCP codecs', () => {
  it('decode gVisor\'s SYN and data segment, checksums verified', () => {
    expect(ipv6PacketLength(HOST_SYN)).toBe(80);
    const ip = decodeIpv6(HOST_SYN)!;
    expect(formatIpv6Address(ip.source)).toBe('fd7c:7093:3606::2');
    expect(formatIpv6Address(ip.destination)).toBe('fd7c:7093:3606::1');
    expect(ip.nextHeader).toBe(6);
    expect(ip.hopLimit).toBe(64);
    expect(decodeTcp(ip.source, ip.destination, ip.payload)).toEqual({
      sourcePort: 0xc17d, destinationPort: 8100, seq: 0x471f888e, ack: 0, flags: TCP_SYN, window: 0x5f00, mss: 1220, windowScale: 7, payload: Buffer.alloc(0),
    });
    const data = decodeIpv6(HOST_DATA)!;
    const segment = decodeTcp(data.source, data.destination, data.payload)!;
    expect(segment.flags).toBe(TCP_ACK | TCP_PSH);
    expect(segment.payload.toString()).toBe('GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  });

  it('encode the SYN-ACK byte for byte as captured, checksum included', () => {
    const tcp = encodeTcp(PHONE, HOST, {
      sourcePort: 8100, destinationPort: 0xc17d, seq: 0xbe6588b5, ack: 0x471f888f, flags: TCP_SYN | TCP_ACK, window: 0xffff, mss: 1220, payload: Buffer.alloc(0),
    });
    expect(encodeIpv6(PHONE, HOST, 6, tcp).toString('hex')).toBe(PHONE_SYN_ACK.toString('hex'));
    // A segment with its checksum in sums to zero: what decodeTcp checks.
    expect(pseudoHeaderChecksum(PHONE, HOST, 6, tcp)).toBe(0);
    // With a Window Scale option: NOP, kind 3, length 3, the shift; decoded as encoded.
    const scaled = encodeTcp(PHONE, HOST, { sourcePort: 1, destinationPort: 2, seq: 3, ack: 4, flags: TCP_SYN | TCP_ACK, window: 65535, mss: 1220, windowScale: 3, payload: Buffer.alloc(0) });
    expect(scaled.subarray(20).toString('hex')).toBe('020404c401030303');
    expect(decodeTcp(PHONE, HOST, scaled)).toMatchObject({ mss: 1220, windowScale: 3 });
  });

  it('refuse a flipped bit, a short header, a data offset past the segment and a length past the packet', () => {
    const flipped = Buffer.from(HOST_DATA);
    flipped[flipped.length - 1]! ^= 1;
    const ip = decodeIpv6(flipped)!;
    expect(decodeTcp(ip.source, ip.destination, ip.payload)).toBeUndefined();
    expect(decodeTcp(HOST, PHONE, HOST_SYN.subarray(40, 55))).toBeUndefined();
    const offset = Buffer.from(HOST_SYN.subarray(40));
    offset[12] = 0xf0; // 60 bytes of header in a 40-byte segment
    expect(decodeTcp(HOST, PHONE, offset)).toBeUndefined();
    const long = Buffer.from(HOST_SYN);
    long.writeUInt16BE(0xffff, 4);
    expect(decodeIpv6(long)).toBeUndefined();
    expect(ipv6PacketLength(Buffer.from('450000', 'hex').subarray(0, 3))).toBeUndefined();
    expect(ipv6PacketLength(Buffer.concat([Buffer.from([0x45]), Buffer.alloc(39)]))).toBe('bad');
    // Options whose length runs past the header end the walk rather than read past it.
    const options = Buffer.from(HOST_SYN.subarray(40));
    options[20] = 2;
    options[21] = 200;
    options.writeUInt16BE(0, 16);
    options.writeUInt16BE(pseudoHeaderChecksum(HOST, PHONE, 6, options), 16);
    expect(decodeTcp(HOST, PHONE, options)?.mss).toBeUndefined();
  });

  it('read and write IPv6 addresses as RFC 5952 writes them', () => {
    for (const text of ['fd7c:7093:3606::1', '::1', '::', 'fe80::1:2:3:4', '2001:db8:0:1:1:1:1:1', '1::']) {
      expect(formatIpv6Address(parseIpv6Address(text)!)).toBe(text);
    }
    expect(formatIpv6Address(parseIpv6Address('2001:0db8:0000:0000:0000:0000:0002:0001')!)).toBe('2001:db8::2:1');
    for (const bad of ['1::2::3', '12345::', '1:2:3:4:5:6:7', 'g::1', '1:2:3:4:5:6:7:8:9']) expect(parseIpv6Address(bad)).toBeUndefined();
  });
});
