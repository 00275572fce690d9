/**
 * How the shared adbd transport (src/protocols/adb/transport.ts, used by the simulated phone and the remote-connect
 * bridge) cuts a stream's bytes into WRTE packets. Without delayed_ack (Debian's adb 1.0.41 has none) each packet
 * costs the host a round trip, so a bulk transfer must go out in full packets: this is most of what the bridge's
 * push/pull throughput depends on. The host here is a real TCP peer speaking the protocol with the shared framing.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A_CNXN, A_OKAY, A_OPEN, A_VERSION_SKIP_CHECKSUM, A_WRTE, A_CLSE, encodeMessage, MessageReader, type AdbMessage } from '../../src/protocols/adb/protocol.js';
import { DEVICE_MAX_PAYLOAD, DeviceConnection, type StreamIo } from '../../src/protocols/adb/transport.js';

const MIB = 1024 * 1024;
/** What the sync service writes per DATA message: an 8-byte header and 64 KiB. */
const SYNC_MESSAGE = 8 + 64 * 1024;

let server: Server;
let port: number;
const services = new Map<string, (io: StreamIo) => void>();

beforeAll(async () => {
  server = createServer((socket) => {
    new DeviceConnection(socket, {
      banner: () => 'device::features=shell_v2',
      openService: (service, io) => {
        const run = services.get(service);
        if (!run) return undefined;
        run(io);
        return {};
      },
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** A host that connects, opens one service, acknowledges every WRTE and resolves to their payload sizes at CLSE. */
async function readStream(service: string): Promise<number[]> {
  const socket: Socket = connect({ host: '127.0.0.1', port, noDelay: true });
  const reader = new MessageReader(MIB, () => false);
  const send = (msg: AdbMessage) => socket.write(encodeMessage(msg, false));
  const sizes: number[] = [];
  try {
    return await new Promise<number[]>((resolve, reject) => {
      socket.on('error', reject);
      socket.on('data', (chunk: Buffer) => {
        for (const msg of reader.push(chunk)) {
          if (msg.command === A_CNXN) send({ command: A_OPEN, arg0: 7, arg1: 0, data: Buffer.from(`${service}\0`) });
          if (msg.command === A_WRTE) {
            sizes.push(msg.data.length);
            send({ command: A_OKAY, arg0: 7, arg1: msg.arg0, data: Buffer.alloc(0) });
          }
          if (msg.command === A_CLSE) resolve(sizes);
        }
      });
      send({ command: A_CNXN, arg0: A_VERSION_SKIP_CHECKSUM, arg1: MIB, data: Buffer.from('host::features=shell_v2\0') });
    });
  } finally {
    socket.destroy();
  }
}

describe('the shared adbd transport', () => {
  it('sends a sync-style bulk stream (64 KiB + 8 per write, each awaited) in full 1 MiB packets', async () => {
    const count = 8 * 16;
    services.set('bulk:', (io) => {
      void (async () => {
        for (let i = 0; i < count; i++) await io.write(Buffer.alloc(SYNC_MESSAGE, i));
        await io.end();
      })();
    });
    const sizes = await readStream('bulk:');
    const total = count * SYNC_MESSAGE;
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(total);
    // Every packet but the last is full: no 128-byte tail costing a round trip of its own after each MiB.
    expect(sizes.slice(0, -1).every((n) => n === DEVICE_MAX_PAYLOAD)).toBe(true);
    expect(sizes.length).toBe(Math.ceil(total / DEVICE_MAX_PAYLOAD));
  });

  it('sends what a relay writes in one turn of the event loop as one packet, not its first chunk alone', async () => {
    services.set('burst:', (io) => {
      // Once the stream is open and idle, a relay reads a burst from its upstream socket as several chunks in one turn.
      setTimeout(() => {
        for (let i = 0; i < 16; i++) void io.write(Buffer.alloc(64 * 1024, i));
        void io.end();
      }, 20);
    });
    expect(await readStream('burst:')).toEqual([DEVICE_MAX_PAYLOAD]);
  });

  it('still sends a small write at once on its own', async () => {
    services.set('echo:', (io) => {
      void io.write('hello\n').then(() => io.end());
    });
    expect(await readStream('echo:')).toEqual([6]);
  });
});
