import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { PlistDict } from './plist-wire.js';
import { encodeMuxMessage, serveMuxClient } from './usbmuxd-wire.js';

let server: Server | undefined;
afterEach(() => server?.close());

/** A usbmuxd on loopback whose requests go to `request`; resolves to a client connection to it. */
async function serve(request: (message: PlistDict, reply: (payload: PlistDict) => void) => void): Promise<Socket> {
  server = createServer((socket) => {
    socket.on('error', () => undefined);
    serveMuxClient(socket, { request, connect: () => false });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  const client = connect({ host: '127.0.0.1', port });
  client.on('error', () => undefined);
  await new Promise((resolve) => client.once('connect', resolve));
  return client;
}

const listDevices = (count: number) => Buffer.concat(Array.from({ length: count }, (_, i) => encodeMuxMessage(i + 1, { MessageType: 'ListDevices' })));

describe('serveMuxClient', () => {
  it('reads no further than 16 requests awaiting their replies', async () => {
    const waiting: Array<() => void> = [];
    const client = await serve((_, reply) => waiting.push(() => reply({ DeviceList: [] })));
    client.write(listDevices(100));
    await new Promise((r) => setTimeout(r, 300));
    expect(waiting).toHaveLength(16);
    for (const answer of waiting.splice(0)) answer();
    await new Promise((r) => setTimeout(r, 300));
    expect(waiting).toHaveLength(16);
    client.destroy();
  });

  it('reads no further while the client leaves its replies unread', async () => {
    let handled = 0;
    const big = { Padding: 'x'.repeat(64 * 1024) };
    const client = await serve((_, reply) => {
      handled++;
      reply(big);
    });
    // Nothing reads the client's side: 1,000 replies of 64 KB would be 64 MB queued in the server.
    client.pause();
    client.write(listDevices(1000));
    await new Promise((r) => setTimeout(r, 1000));
    // What the kernel buffers on loopback (a few MB each way, about 60 replies here) is taken; the rest waits unread.
    expect(handled).toBeLessThan(300);
    client.destroy();
  });
});
