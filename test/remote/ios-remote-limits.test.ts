import { execFile } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRIVATE_USBMUXD_LIMITS } from '../../src/main/engine/fleet/ios/private-usbmuxd.js';
import { parseUsbmuxdAddress } from '../../src/main/engine/fleet/ios/usbmux.js';
import { buildBinary } from 'plist';
import { decodePlist, type PlistDict } from '../../src/protocols/apple/plist-wire.js';
import { encodeMuxMessage, MUX_HEADER, muxFrame, swap16 } from '../../src/protocols/apple/usbmuxd-wire.js';
import { sharedReferencePlist } from '../support/bplist.js';
import { client, startEngine, type TestEngine } from '../support/engine.js';
import { ideviceToolsOrSkip, startIosBus, type IosBus } from '../support/ios-lab.js';
import { waitFor } from '../support/lab.js';
import { remotePorts } from '../support/remote.js';

const run = promisify(execFile);
const tools = ideviceToolsOrSkip();
/** 2^30 leaves in 172 bytes: what blocked the probes' engine for seconds and aborted one with a 512 MB heap. */
const BOMB_LEVELS = 30;
const IDLE_MS = 500;

/**
 * A usbmuxd client connection as the test drives it: the body of every message that comes back (decoded on demand:
 * thousands of XML replies would take the test seconds to decode), and whether it has closed.
 */
interface MuxClient {
  socket: Socket;
  bodies: Buffer[];
  messages: () => PlistDict[];
  closed: Promise<void>;
  isClosed: () => boolean;
}

function muxClient(port: number, localAddress = '127.0.0.1'): Promise<MuxClient> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    const bodies: Buffer[] = [];
    let pending = Buffer.alloc(0);
    let closed = false;
    const whenClosed = new Promise<void>((done) => socket.once('close', () => ((closed = true), done())));
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= MUX_HEADER && pending.length >= pending.readUInt32LE(0)) {
        bodies.push(pending.subarray(MUX_HEADER, pending.readUInt32LE(0)));
        pending = pending.subarray(pending.readUInt32LE(0));
      }
    });
    const messages = () => bodies.map((body) => decodePlist(body));
    socket.once('connect', () => resolve({ socket, bodies, messages, closed: whenClosed, isClosed: () => closed }));
    socket.once('error', reject);
  });
}

/** The distinct messages among many replies, each decoded once. */
const distinct = (bodies: Buffer[]) => [...new Set(bodies.map((b) => b.toString('latin1')))].map((text) => decodePlist(Buffer.from(text, 'latin1')));

const request = (tag: number, message: PlistDict) => encodeMuxMessage(tag, { ClientVersionString: 'test', ProgName: 'test', ...message });

describe.runIf(tools)('remote connect: a held iPhone\'s private usbmuxd keeps its limits whatever a stranger sends', () => {
  let bus: IosBus;
  let engine: TestEngine;
  let port: number;
  let health: string;

  /** How long /health takes now, in ms. The engine runs in this process: a blocked event loop delays this too. */
  const healthMs = async () => {
    const started = performance.now();
    const r = await fetch(health);
    expect(r.status).toBe(200);
    return performance.now() - started;
  };

  beforeAll(async () => {
    bus = await startIosBus([{ name: 'Held iPhone' }]);
    engine = await startEngine({ usbmuxd: parseUsbmuxdAddress(bus.address), adb: null, remotePorts: remotePorts(2), remoteAuthTimeoutSeconds: IDLE_MS / 1000 });
    health = `${engine.api}/health`;
    const c = client(engine.api);
    const owner = await c.login();
    await waitFor('the iPhone in the fleet', async () => ((await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<{ state: string }>).some((p) => p.state === 'device'), 15_000);
    const session = (await c.call('POST', '/sessions', { token: owner })).body.id;
    const a = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'ios' }] } });
    const device = await waitFor('in_use', async () => {
      const d = (await c.call('GET', `/sessions/${session}/devices/${a.body.id}`, { token: owner })).body;
      return d.status === 'in_use' && d;
    }, 15_000);
    const opened = await c.call('POST', `/sessions/${session}/devices/${device.info.serial}/remote-connect`, { token: owner });
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    port = Number(opened.body.address.split(':')[1]);
  }, 60_000);
  afterAll(async () => {
    await engine?.stop();
    await bus?.stop();
  });

  it('a 172-byte binary plist of shared references is refused at once: an error reply and a hang-up, /health within 100 ms, memory flat', async () => {
    const bomb = sharedReferencePlist(BOMB_LEVELS);
    expect(bomb.length).toBeLessThan(200);
    const rss = process.memoryUsage().rss;
    const times: number[] = [];
    const senders: MuxClient[] = [];
    for (let i = 0; i < 3; i++) {
      const sender = await muxClient(port);
      sender.socket.write(muxFrame(1, bomb));
      times.push(await healthMs());
      senders.push(sender);
    }
    // The least of three, so that a busy machine's stray delay is not taken for the engine's.
    expect(Math.min(...times)).toBeLessThan(100);
    expect(process.memoryUsage().rss - rss).toBeLessThan(50 * 1024 * 1024);
    for (const sender of senders) {
      await waitFor('the sender hung up on', () => sender.isClosed(), 5000);
      // usbmuxd's error for a request it cannot read: BADCOMMAND.
      expect(sender.messages()).toEqual([{ MessageType: 'Result', Number: 1 }]);
    }
  });

  it('the same plist to lockdownd, through the relay that decodes what the client sends, closes that tunnel the same way', async () => {
    const lister = await muxClient(port);
    lister.socket.write(request(1, { MessageType: 'ListDevices' }));
    await waitFor('the device list', () => lister.bodies.length === 1, 5000);
    const deviceId = (lister.messages()[0]!.DeviceList as PlistDict[])[0]!.DeviceID;
    lister.socket.destroy();

    const rss = process.memoryUsage().rss;
    const times: number[] = [];
    const tunnels: MuxClient[] = [];
    for (let i = 0; i < 3; i++) {
      const tunnel = await muxClient(port);
      tunnel.socket.write(request(2, { MessageType: 'Connect', DeviceID: deviceId, PortNumber: swap16(62078) }));
      await waitFor('Connect answered', () => tunnel.bodies.length === 1, 5000);
      expect(tunnel.messages()[0]).toMatchObject({ MessageType: 'Result', Number: 0 });
      // Now the socket is lockdownd's: a 4-byte big-endian length, then the plist.
      const bomb = sharedReferencePlist(BOMB_LEVELS);
      const length = Buffer.alloc(4);
      length.writeUInt32BE(bomb.length);
      tunnel.socket.write(Buffer.concat([length, bomb]));
      times.push(await healthMs());
      tunnels.push(tunnel);
    }
    expect(Math.min(...times)).toBeLessThan(100);
    expect(process.memoryUsage().rss - rss).toBeLessThan(50 * 1024 * 1024);
    for (const tunnel of tunnels) await waitFor('the tunnel hung up on', () => tunnel.isClosed(), 5000);
  });

  it('a half-sent header is closed after the idle timeout, while a Listen that has been answered may wait for events', async () => {
    const listener = await muxClient(port);
    listener.socket.write(request(1, { MessageType: 'Listen' }));
    const half = await muxClient(port);
    const started = Date.now();
    half.socket.write(request(1, { MessageType: 'ListDevices' }).subarray(0, 8));
    await half.closed;
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(IDLE_MS - 50);
    expect(waited).toBeLessThan(IDLE_MS + 3000);
    // Answered (Result, then the held phone's Attached) and still open well past the timeout.
    await new Promise((r) => setTimeout(r, IDLE_MS * 2));
    expect(listener.messages().map((m) => m.MessageType)).toEqual(['Result', 'Attached']);
    expect(listener.isClosed()).toBe(false);
    listener.socket.destroy();
  });

  it('past the per-peer cap a stranger\'s connections are closed, and the holder from another address still lists the phone', async () => {
    const cap = PRIVATE_USBMUXD_LIMITS.connectionsPerPeer;
    expect(cap).toBeLessThan(PRIVATE_USBMUXD_LIMITS.connections);
    // The stranger: another loopback address, each connection past its first request so the idle timeout spares it.
    const stranger = await Promise.all(Array.from({ length: cap + 8 }, () => muxClient(port, '127.0.0.2')));
    for (const s of stranger) s.socket.write(request(1, { MessageType: 'ReadBUID' }));
    await waitFor('every stranger connection answered or closed', () => stranger.every((s) => s.bodies.length === 1 || s.isClosed()), 10_000);
    expect(stranger.filter((s) => s.bodies.length === 1 && !s.isClosed()).length).toBe(cap);
    expect(stranger.filter((s) => s.isClosed()).length).toBe(8);
    const listed = await run('idevice_id', ['-l'], { env: { ...process.env, USBMUXD_SOCKET_ADDRESS: `127.0.0.1:${port}` }, timeout: 10_000 });
    expect(listed.stdout.trim()).toBe(bus.phones[0]!.udid);
    for (const s of stranger) s.socket.destroy();
  }, 30_000);

  it('500 Listen on one socket open one upstream Listen, and 5,000 requests in one write share one upstream connection', async () => {
    const before = bus.usbmuxd.accepted;
    const listener = await muxClient(port);
    listener.socket.write(Buffer.concat(Array.from({ length: 500 }, (_, i) => request(i + 1, { MessageType: 'Listen' }))));
    await waitFor('500 Listen answered, and the Attached event', () => listener.bodies.length >= 501, 10_000);
    expect(bus.usbmuxd.accepted - before).toBe(1);
    expect(listener.bodies).toHaveLength(501);
    expect(distinct(listener.bodies).map((m) => m.MessageType).sort()).toEqual(['Attached', 'Result']);

    // Binary plists, as appium-ios-device sends them.
    const asked = [{ MessageType: 'ListDevices' }, { MessageType: 'ReadBUID' }].map((m) => Buffer.from(buildBinary({ ClientVersionString: 'test', ProgName: 'test', ...m })));
    const asker = await muxClient(port);
    asker.socket.write(Buffer.concat(Array.from({ length: 5000 }, (_, i) => muxFrame(i + 1, asked[i % 2]!))));
    await waitFor('5,000 answers', () => asker.bodies.length === 5000, 20_000);
    const answers = distinct(asker.bodies);
    expect(answers).toHaveLength(2);
    expect(answers).toContainEqual({ BUID: bus.usbmuxd.buid });
    expect(answers.find((m) => m.DeviceList)?.DeviceList).toHaveLength(1);
    // The Listen's, and one for every query (it may have closed and opened again between the two).
    expect(bus.usbmuxd.accepted - before).toBeLessThanOrEqual(3);
    expect(await healthMs()).toBeLessThan(1000);
    listener.socket.destroy();
    asker.socket.destroy();
  }, 40_000);
});
