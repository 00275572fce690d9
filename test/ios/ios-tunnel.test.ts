import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Duplex, PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePortPair } from '../../src/main/engine/fleet/ios/tunnel.js';
import { parseUsbmuxdAddress, startService } from '../../src/main/engine/fleet/ios/usbmux.js';
import { CORE_DEVICE_PROXY_SERVICE, CoreDeviceTunnel, TESTMANAGERD_SECURE_SERVICE, type SimulatedIPhone } from '../../src/sim/ios/index.js';
import {
  TCP_ACK, TCP_FIN, TCP_PSH, TCP_RST, TCP_SYN, decodeIpv6, decodeTcp, encodeIpv6, encodeTcp, parseIpv6Address, type TcpSegment,
} from '../../src/sim/ios/tunnel/packets.js';
import { MAX_CONNECTIONS, MAX_HALF_OPEN, TcpEndpoint } from '../../src/sim/ios/tunnel/tcp-endpoint.js';
import { forwardPhonePort, startIosBus, type IosBus } from '../support/ios-lab.js';
import { GO_IOS, goIosOrSkip, throughTunnel, type GoIosTunnel } from '../support/go-ios.js';
import { waitFor } from '../support/lab.js';

const goIos = goIosOrSkip();

/** Sends an HTTP/1.1 request on `socket` and reads the response until the peer closes: status, body, bytes read. */
async function http(socket: Socket, method: string, path: string, body?: Buffer): Promise<{ status: number; body: string; bytes: number }> {
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const closed = new Promise((resolve) => socket.once('close', resolve));
  socket.write(`${method} ${path} HTTP/1.1\r\nHost: device\r\nConnection: close\r\nContent-Length: ${body?.length ?? 0}\r\n\r\n`);
  if (body) socket.write(body);
  await closed;
  const all = Buffer.concat(chunks);
  const text = all.toString('utf8');
  return { status: Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0), body: text.slice(text.indexOf('\r\n\r\n') + 4), bytes: all.length };
}

/**
 * go-ios 1.2.0 (nobody here wrote it), unchanged, against simulated iPhones on a simulated usbmuxd: its tunnel agent
 * (`ios tunnel start --userspace`) opens CoreDeviceProxy tunnels to the 17.4+ phones and reaches their ports through
 * its own user-space TCP/IP stack (gVisor's).
 */
describe.runIf(goIos)('CoreDeviceProxy tunnels, opened by go-ios', () => {
  let bus: IosBus;
  let dir: string;
  let agent: ChildProcess;
  let agentLog = '';
  let infoPort: number;
  let phone175: SimulatedIPhone;
  let phone172: SimulatedIPhone;
  let startedAt: number;
  const env = () => ({ ...process.env, USBMUXD_SOCKET_ADDRESS: bus.address, HOME: dir });

  const goIosRun = (args: string[]) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(GO_IOS, args, { env: env(), cwd: dir });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      child.on('close', (code) => resolve({ code, out }));
    });
  const tunnels = async (): Promise<GoIosTunnel[]> => {
    const { out } = await goIosRun(['tunnel', 'ls', `--tunnel-info-port=${infoPort}`]);
    const line = out.split('\n').find((l) => l.startsWith('['));
    return line ? (JSON.parse(line) as GoIosTunnel[]) : [];
  };
  const tunnelOf = (udid: string) =>
    waitFor(`go-ios's tunnel to ${udid}`, async () => (await tunnels()).find((t) => t.udid === udid), 15_000).catch((error: Error) => {
      throw new Error(`${error.message}; go-ios said:\n${agentLog.slice(-4000)}`);
    });

  beforeAll(async () => {
    bus = await startIosBus([
      // WDA running, as once launched through the tunnel (the lab's part; here the phone is told it runs).
      { name: 'iPhone 17.5', version: '17.5.1', buildVersion: '21F90', wda: true },
      { name: 'iPhone 17.2', version: '17.2.1', buildVersion: '21C66' },
    ]);
    [phone175, phone172] = bus.phones as [SimulatedIPhone, SimulatedIPhone];
    dir = mkdtempSync(join(tmpdir(), 'benchtop-go-ios-'));
    // Its own tunnel-info port (not go-ios's default 28100, nor the lab's): userspace tunnels listen on the ports after it,
    // so the next one must be free too (a full run lost the 17.5 phone's tunnel to another program on that port).
    infoPort = await freePortPair();
    startedAt = Date.now();
    agent = spawn(GO_IOS, ['tunnel', 'start', '--userspace', `--tunnel-info-port=${infoPort}`, `--pair-record-path=${dir}`], { env: env(), cwd: dir });
    agent.stdout!.on('data', (d: Buffer) => (agentLog += d.toString()));
    agent.stderr!.on('data', (d: Buffer) => (agentLog += d.toString()));
  }, 30_000);

  afterAll(async () => {
    if (agent && agent.exitCode === null) {
      const exited = new Promise((resolve) => agent.once('exit', resolve));
      agent.kill();
      await exited;
    }
    await bus?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('`ios tunnel start --userspace` opens a tunnel to the 17.5 phone: `ios tunnel ls` shows its address and RSD port, and WDA answers through it', async () => {
    const tunnel = await tunnelOf(phone175.udid);
    console.log(`go-ios: tunnel listed ${Date.now() - startedAt} ms after \`ios tunnel start\``);
    const [phoneSide] = [...phone175.tunnels];
    expect(phoneSide).toBeDefined();
    expect(tunnel).toEqual({
      address: phoneSide!.serverAddress, rsdPort: phone175.remoteServices.rsdPort, udid: phone175.udid, userspaceTun: true, userspaceTunPort: expect.any(Number),
    });
    expect(tunnel.address).toMatch(/^fd[0-9a-f]{2}:[0-9a-f]{1,4}:[0-9a-f]{1,4}::1$/);
    expect(agentLog).toMatch(/"msg":"userspace tunnel negotiated".*"grantedMtu":1280/);
    // go-ios's own clock: from its attempt (lockdown, StartService, TLS, the CDTunnel handshake) to the tunnel set up.
    const at = (msg: string) => Date.parse(new RegExp(`"time":"([^"]+)","level":"INFO","msg":"${msg}"`).exec(agentLog)![1]!);
    console.log(`go-ios: tunnel set up in ${at('userspace tunnel negotiated') - at('start tunnel')} ms from its attempt`);

    // RSD through the tunnel: go-ios reads the phone's service list (RemoteXPC over HTTP/2) from serverRSDPort.
    const rsd = await goIosRun(['rsd', 'ls', `--udid=${phone175.udid}`, `--tunnel-info-port=${infoPort}`]);
    const services = JSON.parse(rsd.out.split('\n').find((l) => l.startsWith('{"com.apple'))!) as Record<string, { Port: number }>;
    expect(services['com.apple.dt.testmanagerd.remote']?.Port).toEqual(expect.any(Number));
    expect(services['com.apple.coredevice.appservice']?.Port).toEqual(expect.any(Number));

    const status = await http(await throughTunnel(tunnel, 8100), 'GET', '/status');
    expect(status.status).toBe(200);
    const value = (JSON.parse(status.body) as { value: { ready: boolean; os: { version: string } } }).value;
    expect(value).toMatchObject({ ready: true, os: { version: '17.5.1' } });

    // A phone-to-host transfer of many segments arrives whole: the screenshot equals the one read through usbmuxd.
    const viaUsbmuxd = await forwardPhonePort(bus, phone175.udid, 8100);
    try {
      const shot = await http(await throughTunnel(tunnel, 8100), 'GET', '/screenshot');
      const direct = (await (await fetch(`${viaUsbmuxd.url}/screenshot`)).json()) as { value: string };
      expect((JSON.parse(shot.body) as { value: string }).value).toBe(direct.value);
      expect(shot.bytes).toBeGreaterThan(10_000);

      // 10 MB host to phone, through the tunnel and through usbmuxd to the same WDA (which reads it all, then refuses it
      // as not JSON): the tunnel carries it whole, in order, within the phone's window.
      const body = Buffer.alloc(10 * 1024 * 1024, 0x61);
      const tunnelStart = performance.now();
      const sent = await http(await throughTunnel(tunnel, 8100), 'POST', '/status', body);
      const tunnelMs = performance.now() - tunnelStart;
      expect(sent.status).toBe(400);
      expect(sent.body).toContain('The request body is not JSON');
      const directStart = performance.now();
      const direct10 = await fetch(`${viaUsbmuxd.url}/status`, { method: 'POST', body });
      const directMs = performance.now() - directStart;
      expect(direct10.status).toBe(400);
      console.log(`10 MB to WDA: ${tunnelMs.toFixed(0)} ms through the tunnel (${(80 / (tunnelMs / 1000)).toFixed(0)} Mbit/s), ${directMs.toFixed(0)} ms through usbmuxd`);
    } finally {
      viaUsbmuxd.server.close();
    }

    // A closed port is reset, as a phone's: go-ios gives up on the connection at once.
    const refused = await throughTunnel(tunnel, 1234);
    await new Promise((resolve) => refused.once('close', resolve));
    await waitFor('go-ios hearing the reset', () => /"port":1234,"error":"TunnelRWCThroughInterface: Connect to remote failed: connection was refused"/.test(agentLog));

    // WDA's port answers only while WDA runs, as through usbmuxd.
    phone175.killWda();
    const down = await throughTunnel(tunnel, 8100);
    let got = 0;
    down.on('data', (d: Buffer) => (got += d.length));
    await new Promise((resolve) => down.once('close', resolve));
    expect(got).toBe(0);
    phone175.wdaRunning = true;
    expect((await http(await throughTunnel(tunnel, 8100), 'GET', '/status')).status).toBe(200);
    // Every connection above has closed on both sides: none is left in the phone's endpoint.
    await waitFor('the phone\'s connections closed', () => phoneSide!.endpoint!.connections.size === 0, 5000);
  });

  it('a 17.2 phone has no CoreDeviceProxy (InvalidService) and go-ios opens no userspace tunnel to it; lockdown refuses testmanagerd on 17+', async () => {
    const address = parseUsbmuxdAddress(bus.address);
    await expect(startService(address, phone172.udid, CORE_DEVICE_PROXY_SERVICE)).rejects.toThrow(/InvalidService/);
    await expect(startService(address, phone175.udid, TESTMANAGERD_SECURE_SERVICE)).rejects.toThrow(/InvalidService/);
    await expect(startService(address, phone172.udid, TESTMANAGERD_SECURE_SERVICE)).rejects.toThrow(/InvalidService/);
    // go-ios knows the range: it asks 17.0-17.3 for a remote-pairing tunnel, which needs root, not CoreDeviceProxy.
    await waitFor('go-ios refusing the 17.2 phone', () => agentLog.includes(`"udid":"${phone172.udid}","error":"manualPairingTunnelStart: userspaceTUN not supported for iOS >=17 and < 17.4"`));
    expect((await tunnels()).map((t) => t.udid)).not.toContain(phone172.udid);
    expect(phone172.tunnels.size).toBe(0);
  });

  it('unplugging the phone mid-tunnel ends its connections and go-ios drops the tunnel; plugged in again, go-ios opens a new one, which a restart ends', async () => {
    const tunnel = await tunnelOf(phone175.udid);
    const [phoneSide] = [...phone175.tunnels];
    // A live screen: WDA's MJPEG stream runs for as long as the connection does.
    const stream = await throughTunnel(tunnel, 9100);
    stream.write('GET / HTTP/1.1\r\nHost: device\r\n\r\n');
    let streamed = 0;
    stream.on('data', (d: Buffer) => (streamed += d.length));
    await waitFor('MJPEG frames through the tunnel', () => streamed > 10_000);
    const closed = new Promise((resolve) => stream.once('close', resolve));
    phone175.unplug();
    await closed;
    expect(phone175.tunnels.size).toBe(0);
    expect(phoneSide!.endpoint!.connections.size).toBe(0);
    await waitFor('go-ios dropping the tunnel', async () => !(await tunnels()).some((t) => t.udid === phone175.udid), 10_000);
    expect(agentLog).toMatch(new RegExp(`"msg":"stopping tunnel".*"udid":"${phone175.udid}"`));

    await phone175.plugInto(bus.usbmuxd);
    const again = await tunnelOf(phone175.udid);
    expect(again.address).not.toBe(tunnel.address);
    expect((await http(await throughTunnel(again, 8100), 'GET', '/status')).status).toBe(200);

    // A restart (diagnostics_relay's) takes it off the bus too: the new tunnel and its connections end at once.
    const [secondSide] = [...phone175.tunnels];
    const held = await throughTunnel(again, 9100);
    held.write('GET / HTTP/1.1\r\nHost: device\r\n\r\n');
    await new Promise((resolve) => held.once('data', resolve));
    const heldClosed = new Promise((resolve) => held.once('close', resolve));
    phone175.restart();
    await heldClosed;
    expect(phone175.tunnels.size).toBe(0);
    expect(secondSide!.endpoint!.connections.size).toBe(0);
  });
});

// ---- the phone's IPv6/TCP endpoint, byte by byte ----

const HOST = parseIpv6Address('fd12:3456:789a::2')!;
const PHONE = parseIpv6Address('fd12:3456:789a::1')!;

function packet(segment: Partial<TcpSegment> & { flags: number }, from = HOST, to = PHONE): Buffer {
  const full: TcpSegment = { sourcePort: 50000, destinationPort: 8100, seq: 1000, ack: 0, window: 65535, payload: Buffer.alloc(0), ...segment };
  return encodeIpv6(from, to, 6, encodeTcp(from, to, full));
}

/** An endpoint whose sent segments are collected, with one listening port (8100) whose connections are collected. */
function endpoint(mtu = 1280) {
  const sent: TcpSegment[] = [];
  const accepted: Duplex[] = [];
  const ep = new TcpEndpoint({
    address: PHONE,
    mtu,
    send: (bytes) => {
      expect(bytes.length).toBeLessThanOrEqual(mtu);
      const ip = decodeIpv6(bytes)!;
      sent.push(decodeTcp(ip.source, ip.destination, ip.payload)!);
    },
    listener: (port) => (port === 8100 ? (socket) => void accepted.push(socket) : undefined),
  });
  return { ep, sent, accepted };
}

describe('the phone\'s IPv6/TCP endpoint', () => {
  it('opens, carries data both ways within the peer\'s window and MSS, answers duplicates and gaps, and closes', async () => {
    const { ep, sent, accepted } = endpoint();
    ep.receive(packet({ flags: TCP_SYN, mss: 500, window: 1000 }));
    const synAck = sent.shift()!;
    expect(synAck).toMatchObject({ flags: TCP_SYN | TCP_ACK, ack: 1001, mss: 1220, sourcePort: 8100, destinationPort: 50000 });
    const iss = synAck.seq;
    ep.receive(packet({ flags: TCP_ACK, seq: 1001, ack: iss + 1, window: 1000 }));
    expect(accepted).toHaveLength(1);
    const socket = accepted[0]!;
    const received: Buffer[] = [];
    socket.on('data', (d: Buffer) => received.push(d));

    ep.receive(packet({ flags: TCP_ACK | TCP_PSH, seq: 1001, ack: iss + 1, window: 1000, payload: Buffer.from('hello') }));
    // A retransmission of the same bytes is acknowledged again, not delivered twice; a segment past a gap gets a
    // duplicate ACK for where the gap starts.
    ep.receive(packet({ flags: TCP_ACK | TCP_PSH, seq: 1001, ack: iss + 1, window: 1000, payload: Buffer.from('hello') }));
    ep.receive(packet({ flags: TCP_ACK | TCP_PSH, seq: 1010, ack: iss + 1, window: 1000, payload: Buffer.from('later') }));
    await new Promise((resolve) => setImmediate(resolve));
    expect(Buffer.concat(received).toString()).toBe('hello');
    expect(sent.splice(0).map((s) => s.ack)).toEqual([1006, 1006, 1006]);

    // 3000 bytes to a peer with a 1000-byte window and an MSS of 500: two segments, then nothing until it acknowledges.
    socket.write(Buffer.alloc(3000, 0x62));
    expect(sent.map((s) => s.payload.length)).toEqual([500, 500]);
    ep.receive(packet({ flags: TCP_ACK, seq: 1006, ack: iss + 1 + 1000, window: 1000 }));
    expect(sent.map((s) => s.payload.length)).toEqual([500, 500, 500, 500]);
    // An ACK for bytes never sent is answered with an ACK and otherwise ignored; the ones sent are then acknowledged,
    // and the rest goes out.
    ep.receive(packet({ flags: TCP_ACK, seq: 1006, ack: iss + 1 + 3000, window: 1000 }));
    expect(sent).toHaveLength(5);
    expect(sent.at(-1)).toMatchObject({ flags: TCP_ACK, seq: iss + 1 + 2000, payload: Buffer.alloc(0) });
    ep.receive(packet({ flags: TCP_ACK, seq: 1006, ack: iss + 1 + 2000, window: 1000 }));
    expect(sent.reduce((n, s) => n + s.payload.length, 0)).toBe(3000);
    ep.receive(packet({ flags: TCP_ACK, seq: 1006, ack: iss + 1 + 3000, window: 1000 }));
    sent.length = 0;

    // The peer closes its side; the service ends its own: FIN, ACK, and the connection is gone.
    const ended = new Promise((resolve) => socket.once('end', resolve));
    ep.receive(packet({ flags: TCP_ACK | TCP_FIN, seq: 1006, ack: iss + 3001 }));
    await ended;
    expect(sent.shift()).toMatchObject({ flags: TCP_ACK, ack: 1007 });
    socket.end();
    await new Promise((resolve) => setImmediate(resolve));
    const fin = sent.shift()!;
    expect(fin.flags).toBe(TCP_FIN | TCP_ACK);
    const closed = new Promise((resolve) => socket.once('close', resolve));
    ep.receive(packet({ flags: TCP_ACK, seq: 1007, ack: fin.seq + 1 }));
    await closed;
    expect(ep.connections.size).toBe(0);
  });

  it('scales windows both ways when the peer\'s SYN offers it (RFC 7323)', () => {
    const { ep, sent, accepted } = endpoint();
    ep.receive(packet({ flags: TCP_SYN, windowScale: 7, window: 100 }));
    const synAck = sent.shift()!;
    expect(synAck).toMatchObject({ flags: TCP_SYN | TCP_ACK, windowScale: 3, window: 65535 });
    // The peer's 10 is 10 << 7 = 1280 bytes: one full segment and 60 bytes, then nothing until it acknowledges.
    ep.receive(packet({ flags: TCP_ACK, seq: 1001, ack: synAck.seq + 1, window: 10 }));
    accepted[0]!.write(Buffer.alloc(3000));
    expect(sent.map((s) => s.payload.length)).toEqual([1220, 60]);
    // The phone's 256 KiB buffer, announced as 32768 << 3.
    expect(sent[0]!.window).toBe(32768);
    ep.close();
  });

  it('resets closed ports and unknown connections, and a peer\'s reset ends the connection', async () => {
    const { ep, sent, accepted } = endpoint();
    ep.receive(packet({ flags: TCP_SYN, destinationPort: 9999 }));
    expect(sent.shift()).toMatchObject({ flags: TCP_RST | TCP_ACK, ack: 1001, sourcePort: 9999 });
    ep.receive(packet({ flags: TCP_ACK, ack: 4242, sourcePort: 50001 }));
    expect(sent.shift()).toMatchObject({ flags: TCP_RST, seq: 4242 });
    ep.receive(packet({ flags: TCP_RST, sourcePort: 50002 }));
    expect(sent).toHaveLength(0);

    ep.receive(packet({ flags: TCP_SYN }));
    const iss = sent.shift()!.seq;
    ep.receive(packet({ flags: TCP_ACK, seq: 1001, ack: iss + 1 }));
    const closed = new Promise((resolve) => accepted[0]!.once('close', resolve));
    ep.receive(packet({ flags: TCP_RST, seq: 1001 }));
    await closed;
    expect(ep.connections.size).toBe(0);
    // Closing the endpoint (the tunnel went away) resets what is open.
    ep.receive(packet({ flags: TCP_SYN, sourcePort: 50003 }));
    ep.receive(packet({ flags: TCP_ACK, seq: 1001, ack: sent.at(-1)!.seq + 1, sourcePort: 50003 }));
    ep.close();
    expect(sent.at(-1)!.flags).toBe(TCP_RST | TCP_ACK);
    expect(ep.connections.size).toBe(0);
  });

  it('takes hostile bytes without throwing or growing: bad checksums, truncated headers, huge lengths, another address, a SYN flood', () => {
    const { ep, sent } = endpoint();
    const good = packet({ flags: TCP_SYN });
    const badChecksum = Buffer.from(good);
    badChecksum[badChecksum.length - 1]! ^= 0xff;
    const hugeLength = Buffer.from(good);
    hugeLength.writeUInt16BE(0xffff, 4);
    const notTcp = Buffer.from(good);
    notTcp[6] = 17;
    const hostile = [
      Buffer.alloc(0), Buffer.alloc(39, 0x60), badChecksum, hugeLength, notTcp, good.subarray(0, 50),
      packet({ flags: TCP_SYN }, HOST, parseIpv6Address('fd12:3456:789a::99')!), Buffer.concat([Buffer.from([0x45]), good.subarray(1)]),
    ];
    for (let i = 0; i < 2000; i++) hostile.push(Buffer.from(Array.from({ length: (i * 7919) % 1500 }, (_, j) => (i * 31 + j * 17) & 0xff)));
    for (const bytes of hostile) expect(() => ep.receive(bytes)).not.toThrow();
    expect(sent).toHaveLength(0);
    expect(ep.connections.size).toBe(0);
    expect(ep.dropped).toBe(hostile.length);

    // 10,000 SYNs from as many ports, never completed: only MAX_HALF_OPEN get a SYN-ACK and a connection.
    for (let port = 1; port <= 10_000; port++) ep.receive(packet({ flags: TCP_SYN, sourcePort: port }));
    expect(ep.connections.size).toBe(MAX_HALF_OPEN);
    expect(sent).toHaveLength(MAX_HALF_OPEN);
    expect(MAX_CONNECTIONS).toBeGreaterThan(MAX_HALF_OPEN);
    ep.close();
    expect(ep.connections.size).toBe(0);
  });

  it('the CDTunnel handshake, and a tunnel that refuses what is not one or loses its framing', async () => {
    const tunnelOver = () => {
      const host = new PassThrough();
      const phone = new PassThrough();
      // The service connection as the phone sees it: it reads what the host writes, and writes what the host reads.
      const stream = Duplex.from({ readable: host, writable: phone });
      const tunnel = new CoreDeviceTunnel(stream, { rsdPort: 58783, listener: () => undefined });
      return { tunnel, host, phone };
    };
    const hello = (body: string) => {
      const header = Buffer.alloc(10);
      header.write('CDTunnel');
      header.writeUInt16BE(Buffer.byteLength(body), 8);
      return Buffer.concat([header, Buffer.from(body)]);
    };

    const { tunnel, host, phone } = tunnelOver();
    const answer = new Promise<Buffer>((resolve) => phone.once('data', resolve));
    host.write(hello(JSON.stringify({ type: 'clientHandshakeRequest', mtu: 1280 })));
    const reply = await answer;
    expect(reply.subarray(0, 8).toString()).toBe('CDTunnel');
    expect(reply.readUInt16BE(8)).toBe(reply.length - 10);
    expect(JSON.parse(reply.subarray(10).toString())).toEqual({
      type: 'serverHandshakeResponse',
      clientParameters: { address: tunnel.clientAddress, netmask: 'ffff:ffff:ffff:ffff::', mtu: 1280 },
      serverAddress: tunnel.serverAddress,
      serverRSDPort: 58783,
    });
    // A packet that declares 65,535 bytes is held until it is whole and dropped (over the MTU); then a header that is
    // not IPv6 ends the tunnel (its framing is lost).
    const closed = new Promise((resolve) => tunnel.onClose(() => resolve(undefined)));
    host.write(Buffer.concat([Buffer.from([0x60, 0, 0, 0, 0xff, 0xff, 6, 64]), Buffer.alloc(32)]));
    host.write(Buffer.alloc(65_535 - 1000));
    host.write(Buffer.concat([Buffer.alloc(1000), Buffer.from([0x45]), Buffer.alloc(60)]));
    await closed;
    expect(tunnel.endpoint!.dropped).toBe(1);

    for (const bad of [hello('{"type":"other","mtu":1280}'), hello('not json'), Buffer.from('GET / HTTP/1.1\r\n\r\n'), Buffer.concat([Buffer.from('CDTunnel'), Buffer.from([0xff, 0xff])])]) {
      const t = tunnelOver();
      const refused = new Promise((resolve) => t.tunnel.onClose(() => resolve(undefined)));
      t.host.write(bad);
      await refused;
      expect(t.tunnel.endpoint).toBeUndefined();
    }
  });
});
