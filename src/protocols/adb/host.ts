import { connect } from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * The adb server's "smart socket" protocol (AOSP adb/SERVICES.TXT): a request is its length in four hex digits and
 * its text; the server answers OKAY, or FAIL with a hex-length message. After `host:transport:<serial>` and OKAY,
 * the next request on the same socket is a service on that phone, and after its OKAY the socket is the stream.
 */

/**
 * An adb server: at a TCP address (the lab's own), or through a stream opened on demand (a provider's, over its SSH
 * connection), named for messages.
 */
export type AdbServerAddress = { host: string; port: number } | { name: string; open: () => Promise<Duplex> };

export class AdbFail extends Error {}

/** Reads exactly n bytes (or fewer, at the end) from a socket that is not flowing yet; leftovers are unshifted. */
function readBytes(socket: Duplex, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let got: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      got = got.length === 0 ? chunk : Buffer.concat([got, chunk]);
      if (got.length < n) return;
      done();
      if (got.length > n) socket.unshift(got.subarray(n));
      resolve(got.subarray(0, n));
    };
    const onEnd = () => {
      done();
      reject(new AdbFail(`the adb server closed the connection after ${got.length} of ${n} bytes`));
    };
    const onError = (error: Error) => {
      done();
      reject(error);
    };
    const done = () => {
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('error', onError);
      socket.pause();
    };
    socket.on('data', onData);
    socket.once('end', onEnd);
    socket.once('error', onError);
    socket.resume();
  });
}

async function status(socket: Duplex): Promise<void> {
  const word = (await readBytes(socket, 4)).toString('latin1');
  if (word === 'OKAY') return;
  if (word !== 'FAIL') throw new AdbFail(`the adb server answered ${JSON.stringify(word)}`);
  const length = parseInt((await readBytes(socket, 4)).toString('latin1'), 16);
  throw new AdbFail((await readBytes(socket, length)).toString('utf8'));
}

function request(socket: Duplex, text: string): Promise<void> {
  const body = Buffer.from(text, 'utf8');
  socket.write(Buffer.concat([Buffer.from(body.length.toString(16).padStart(4, '0'), 'latin1'), body]));
  return status(socket);
}

async function open(address: AdbServerAddress): Promise<Duplex> {
  if ('open' in address) {
    const stream = await address.open();
    stream.pause();
    return stream;
  }
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address.host, port: address.port, noDelay: true });
    socket.pause();
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/** Opens `service` on the phone and resolves to the raw stream; rejects with AdbFail when the server refuses. */
export async function openDeviceService(address: AdbServerAddress, serial: string, service: string): Promise<Duplex> {
  const socket = await open(address);
  try {
    await request(socket, `host:transport:${serial}`);
    await request(socket, service);
    return socket;
  } catch (error) {
    socket.destroy();
    throw error;
  }
}

/**
 * A host query that answers with one hex-length payload (host:devices-l, host-serial:<serial>:features, host:version).
 * With `timeoutMs`, a peer that accepts and never answers (not an adb server) fails the query then.
 */
export function hostQuery(address: AdbServerAddress, query: string, timeoutMs?: number): Promise<string> {
  return onHostSocket(address, timeoutMs, `no answer to ${query} in ${timeoutMs} ms`, async (socket) => {
    await request(socket, query);
    const length = parseInt((await readBytes(socket, 4)).toString('latin1'), 16);
    return (await readBytes(socket, length)).toString('utf8');
  });
}

/** One host request's socket, closed after `work`; with `timeoutMs`, failed with `late` when the server takes longer. */
async function onHostSocket<T>(address: AdbServerAddress, timeoutMs: number | undefined, late: string, work: (socket: Duplex) => Promise<T>): Promise<T> {
  const socket = await open(address);
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => socket.destroy(new AdbFail(late)), timeoutMs);
  try {
    return await work(socket);
  } finally {
    clearTimeout(timer);
    socket.destroy();
  }
}

/**
 * Waits until `serial` is a device (signed in) for the server, as `adb -s <serial> wait-for-device` does
 * (`host-serial:<serial>:wait-for-any-device`: OKAY for the request, then OKAY once the phone is there), without a
 * client process: spawned from the engine, each cost its event loop tens of ms.
 */
export function waitForDevice(address: AdbServerAddress, serial: string, timeoutMs: number): Promise<void> {
  return onHostSocket(address, timeoutMs, `${serial} was not a device within ${timeoutMs} ms`, async (socket) => {
    await request(socket, `host-serial:${serial}:wait-for-any-device`);
    await status(socket);
  });
}
