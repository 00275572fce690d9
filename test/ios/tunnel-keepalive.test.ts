import { describe, expect, it } from 'vitest';
import { TCP_ACK, TCP_SYN, decodeIpv6, decodeTcp, encodeIpv6, encodeTcp, parseIpv6Address, type TcpSegment } from '../../src/sim/ios/tunnel/packets.js';
import { TcpEndpoint } from '../../src/sim/ios/tunnel/tcp-endpoint.js';

const HOST = parseIpv6Address('fd12:3456:789a::2')!;
const PHONE = parseIpv6Address('fd12:3456:789a::1')!;

const packet = (segment: Partial<TcpSegment> & { flags: number }) =>
  encodeIpv6(HOST, PHONE, 6, encodeTcp(HOST, PHONE, { sourcePort: 50000, destinationPort: 8100, seq: 1000, ack: 0, window: 65535, payload: Buffer.alloc(0), ...segment }));

/**
 * go-ios's userspace stack (gVisor) sends keep-alive probes on a connection idle for 30 s: no data, the sequence number
 * one before the next it would send. A phone's stack answers each with an ACK; one that does not has its connections
 * timed out after 9 probes, and with them runwda's and WDA (the fleet then restarts WDA every 40 s).
 */
describe('the phone\'s TCP endpoint and keep-alive probes', () => {
  it('answers a probe (no data, an old sequence number) with an ACK for what it expects next, and delivers nothing', async () => {
    const sent: TcpSegment[] = [];
    const received: Buffer[] = [];
    const ep = new TcpEndpoint({
      address: PHONE,
      mtu: 1280,
      send: (bytes) => {
        const ip = decodeIpv6(bytes)!;
        sent.push(decodeTcp(ip.source, ip.destination, ip.payload)!);
      },
      listener: (port) => (port === 8100 ? (socket) => void socket.on('data', (d: Buffer) => received.push(d)) : undefined),
    });
    ep.receive(packet({ flags: TCP_SYN }));
    const iss = sent.shift()!.seq;
    ep.receive(packet({ flags: TCP_ACK, seq: 1001, ack: iss + 1 }));
    expect(sent).toHaveLength(0);

    for (let probe = 0; probe < 3; probe++) {
      ep.receive(packet({ flags: TCP_ACK, seq: 1000, ack: iss + 1 }));
      expect(sent.shift()).toMatchObject({ flags: TCP_ACK, seq: iss + 1, ack: 1001 });
    }
    // An ACK that is not a probe (the sequence number it should have) is not answered: no ACK storm.
    ep.receive(packet({ flags: TCP_ACK, seq: 1001, ack: iss + 1 }));
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toHaveLength(0);
    expect(received).toHaveLength(0);
    ep.close();
  });
});
