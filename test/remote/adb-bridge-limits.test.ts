/**
 * What a stranger can do to the adb bridge of a held phone, and what a signed-in holder can do to the lab's adb server:
 * sockets held open and reopened, a CNXN flood that never reads its AUTH replies, bad checksums and oversized payloads
 * before sign-in, and thousands of OPENs on one signed-in connection. The bridge is the engine's own, reached through
 * remote-connect; the holder signs in with Debian's adb, or by hand with the same adb key.
 */
import { execFileSync } from 'node:child_process';
import { constants, createPrivateKey, privateEncrypt, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADB_BRIDGE_LIMITS } from '../../src/main/engine/fleet/android/adb-bridge.js';
import { A_AUTH, A_CLSE, A_CNXN, A_OKAY, A_OPEN, A_VERSION_SKIP_CHECKSUM, encodeHeader, encodeMessage, MessageReader, payloadChecksum, type AdbMessage } from '../../src/protocols/adb/protocol.js';
import { AUTH_SIGNATURE, AUTH_TOKEN, DeviceConnection } from '../../src/protocols/adb/transport.js';
import { startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { client } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';
import { remotePorts } from '../support/remote.js';

const hasAdb = adbOrSkip();
const MIB = 1024 * 1024;
/** What adb signs: its 20-byte token as the digest of a PKCS#1 v1.5 SHA-1 DigestInfo. */
const SHA1_DIGEST_INFO = Buffer.from('3021300906052b0e03021a05000414', 'hex');
const HOST_BANNER = Buffer.from('host::features=shell_v2,cmd,stat_v2,ls_v2,fixed_push_mkdir,apex,abb,abb_exec\0');
const cnxn = (checksum = true) => encodeMessage({ command: A_CNXN, arg0: A_VERSION_SKIP_CHECKSUM, arg1: MIB, data: HOST_BANNER }, checksum);

/** A host speaking the protocol by hand: what it was sent, and whether the bridge has closed it. */
class RawHost {
  readonly socket: Socket;
  readonly received: AdbMessage[] = [];
  closed = false;
  private readonly reader = new MessageReader(MIB, () => false);
  private waiters: Array<() => void> = [];

  constructor(port: number) {
    this.socket = connect({ host: '127.0.0.1', port, noDelay: true });
    this.socket.on('data', (chunk: Buffer) => {
      for (const msg of this.reader.push(chunk)) this.received.push(msg);
      this.wake();
    });
    this.socket.on('error', () => undefined);
    this.socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
  }

  ready(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.socket.once('connect', resolve);
      this.socket.once('error', reject);
    });
  }

  send(msg: AdbMessage, checksum = true): void {
    this.socket.write(encodeMessage(msg, checksum));
  }

  /** Resolves once `done` holds; rejects naming `what` after the timeout, or at once if the bridge closed the connection. */
  async until(what: string, done: () => boolean, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (this.closed) throw new Error(`closed while waiting for ${what}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what} (received ${this.received.length}, closed ${this.closed})`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => (clearTimeout(timer), resolve()));
      });
    }
  }

  /** Signs in with the key as adb does (checksummed CNXN, a signature over the token) and waits for the bridge's CNXN. */
  async signIn(key: KeyObject): Promise<void> {
    await this.ready();
    this.socket.write(cnxn());
    await this.until('an AUTH token', () => this.received.some((m) => m.command === A_AUTH && m.arg0 === AUTH_TOKEN));
    const token = this.received.find((m) => m.command === A_AUTH)!.data;
    const signature = privateEncrypt({ key, padding: constants.RSA_PKCS1_PADDING }, Buffer.concat([SHA1_DIGEST_INFO, token]));
    this.send({ command: A_AUTH, arg0: AUTH_SIGNATURE, arg1: 0, data: signature });
    await this.until('the CNXN of a signed-in host', () => this.received.some((m) => m.command === A_CNXN));
  }

  destroy(): void {
    this.socket.destroy();
  }

  private wake(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }
}

/**
 * A stranger holding `count` sockets open from `localAddress` without a word, each reopened as soon as the bridge drops
 * it. Resolves to a stop function and a count of the reopenings.
 */
function holdSilentSockets(port: number, count: number, localAddress: string): { stop: () => void; reopened: () => number } {
  let stopped = false;
  let reopened = 0;
  const open = (): void => {
    if (stopped) return;
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      sockets.delete(socket);
      if (stopped) return;
      reopened++;
      open();
    });
  };
  const sockets = new Set<Socket>();
  for (let i = 0; i < count; i++) open();
  return {
    stop: () => {
      stopped = true;
      for (const socket of sockets) socket.destroy();
    },
    reopened: () => reopened,
  };
}

/** Engine sockets connected to the lab's adb server: one per stream the bridge relays, plus the fleet's own few. */
function connectionsTo(port: number): number {
  const out = execFileSync('ss', ['-Htn', 'state', 'established', `( dport = :${port} )`], { encoding: 'utf8' });
  return out.split('\n').filter((line) => line.trim() !== '').length;
}

describe('the adbd transport before sign-in, toward a host that never reads', () => {
  /**
   * Over a Unix socket, whose kernel buffers hold a few hundred small packets rather than loopback TCP's megabytes: what
   * the device end queues past them is what it would hold in memory for a host that never reads.
   */
  it('stops reading a CNXN flood once 16 KiB of answers wait, instead of queueing a token for each CNXN', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'benchtop-adbd-'));
    const path = join(dir, 'adbd.sock');
    let device: Socket | undefined;
    const server = createServer((socket) => {
      device = socket;
      new DeviceConnection(socket, { banner: () => 'device::', openService: () => undefined, auth: { verify: () => false } });
    });
    await new Promise<void>((resolve) => server.listen(path, resolve));
    const host = connect({ path });
    host.on('error', () => undefined);
    try {
      const burst = Buffer.concat(Array.from({ length: 256 }, () => cnxn()));
      // Sends until the device stops taking CNXNs for half a second, or until it holds 4 MB of answers.
      await new Promise<void>((resolve) => {
        const more = (): void => {
          while ((device?.writableLength ?? 0) < 4 * MIB) {
            if (!host.write(burst)) {
              const timer = setTimeout(resolve, 500);
              host.once('drain', () => (clearTimeout(timer), more()));
              return;
            }
          }
          resolve();
        };
        host.on('connect', more);
      });
      expect(device!.writableLength).toBeLessThanOrEqual(32 * 1024);
      expect(device!.isPaused()).toBe(true);
    } finally {
      host.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!hasAdb)('remote connect: the adb bridge against strangers and a greedy holder', () => {
  let lab: TestLab;
  let mine: AdbServer;
  let address: string;
  let port: number;
  let myKey: KeyObject;

  beforeAll(async () => {
    [lab, mine] = await Promise.all([startLab([{ model: 'Pixel 8', osVersion: '14' }], { remotePorts: remotePorts(3) }), startAdbServer()]);
    const c = client(lab.engine.api);
    const owner = await c.login();
    const pub = readFileSync(join(mine.env.HOME!, '.android', 'adbkey.pub'), 'utf8');
    myKey = createPrivateKey(readFileSync(join(mine.env.HOME!, '.android', 'adbkey')));
    expect((await c.call('POST', '/adb-keys', { token: owner, body: { publicKey: pub } })).status).toBe(201);
    const held = await allocateInUse(c, owner, 'Pixel 8');
    const opened = await c.call('POST', `/sessions/${held.session}/devices/${held.serial}/remote-connect`, { token: owner });
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    address = opened.body.address;
    port = Number(address.split(':')[1]);
  }, 60_000);
  afterAll(async () => {
    await mine?.stop();
    await lab?.stop();
  });

  it('a stranger\'s silent sockets, reopened as soon as each drops, never keep the holder\'s `adb connect` out', async () => {
    // Eight from the holder's own address (all the old bridge had room for), and more than a pool's worth from another.
    const sameAddress = holdSilentSockets(port, 8, '127.0.0.1');
    const otherAddress = holdSilentSockets(port, ADB_BRIDGE_LIMITS.pendingPerPeer + 8, '127.0.0.2');
    try {
      await delay(300);
      const tries: number[] = [];
      for (let i = 0; i < 4; i++) {
        await mine.run(['disconnect', address]);
        const started = performance.now();
        const connected = await mine.run(['connect', address], { timeoutMs: 20_000 });
        tries.push(Math.round(performance.now() - started));
        expect(connected.stdout.toString(), `try ${i + 1}: ${connected.stderr}`).toContain(`connected to ${address}`);
        await waitFor('the bridge to be a device', async () => (await mine.run(['devices'])).stdout.toString().includes(`${address}\tdevice`), 5000);
      }
      expect(Math.max(...tries), `connect times ${tries.join(', ')} ms`).toBeLessThan(2000);
      // The stranger from the other address was pushed out of its own pool, again and again, and nobody else's.
      expect(otherAddress.reopened()).toBeGreaterThan(0);
      const shell = await mine.run(['-s', address, 'shell', 'echo', 'in'], { timeoutMs: 20_000 });
      expect(shell.stdout.toString().trim()).toBe('in');
    } finally {
      sameAddress.stop();
      otherAddress.stop();
      await mine.run(['disconnect', address]);
    }
  }, 60_000);

  it('before sign-in, a bad checksum or a payload larger than adb sends then is refused: the connection closes unanswered', async () => {
    // A CNXN whose checksum is off by one.
    const badCnxn = new RawHost(port);
    await badCnxn.ready();
    const bytes = cnxn();
    bytes.writeUInt32LE((payloadChecksum(HOST_BANNER) + 1) >>> 0, 16);
    badCnxn.socket.write(bytes);
    await badCnxn.until('the bridge to close', () => badCnxn.closed);
    expect(badCnxn.received).toEqual([]);

    // A good CNXN, then a signature whose checksum is wrong: no second token, the connection closes.
    const badAuth = new RawHost(port);
    await badAuth.ready();
    badAuth.socket.write(cnxn());
    await badAuth.until('an AUTH token', () => badAuth.received.length > 0);
    const signature = Buffer.alloc(256, 7);
    const header = encodeHeader({ command: A_AUTH, arg0: AUTH_SIGNATURE, arg1: 0, data: signature }, true);
    header.writeUInt32LE((payloadChecksum(signature) ^ 1) >>> 0, 16);
    badAuth.socket.write(Buffer.concat([header, signature]));
    await badAuth.until('the bridge to close', () => badAuth.closed);
    expect(badAuth.received.map((m) => m.command)).toEqual([A_AUTH]);

    // A CNXN announcing 64 KiB: refused on its header, without waiting for the bytes.
    const big = new RawHost(port);
    await big.ready();
    big.socket.write(encodeHeader({ command: A_CNXN, arg0: A_VERSION_SKIP_CHECKSUM, arg1: MIB, data: Buffer.alloc(64 * 1024) }, true));
    await big.until('the bridge to close', () => big.closed);
    expect(big.received).toEqual([]);

    // Checksums are what adb sends: the same CNXN with its checksum gets a token.
    const good = new RawHost(port);
    await good.ready();
    good.socket.write(cnxn());
    await good.until('an AUTH token', () => good.received.length > 0);
    expect(good.received[0]).toMatchObject({ command: A_AUTH, arg0: AUTH_TOKEN });
    good.destroy();
  });

  it('a CNXN flood that never reads its AUTH replies grows the engine by under 50 MB', async () => {
    // One connection sending CNXNs as fast as the bridge takes them, never reading. What the bridge does not take waits
    // in the kernel or, up to the socket's high-water mark, in this process. The kernel's buffers take a few MB of
    // tokens first; the old bridge then queued every further token in the engine, about 400 bytes of memory each.
    const small = encodeMessage({ command: A_CNXN, arg0: A_VERSION_SKIP_CHECKSUM, arg1: MIB, data: Buffer.from('host::\0') }, true);
    const burst = Buffer.concat(Array.from({ length: 256 }, () => small));
    const floods: Socket[] = [];
    const flood = (forMs: number, stopAt: number) => {
      const socket = connect({ host: '127.0.0.1', port });
      floods.push(socket);
      const started = Date.now();
      return new Promise<number>((resolve) => {
        let total = 0;
        const more = (): void => {
          while (process.memoryUsage().rss < stopAt && Date.now() - started < forMs) {
            total += burst.length;
            if (!socket.write(burst)) {
              // The bridge stopped reading (what it should do once its answers pile up): give up after a while.
              const timer = setTimeout(() => resolve(total), 1000);
              socket.once('drain', () => (clearTimeout(timer), more()));
              return;
            }
          }
          resolve(total);
        };
        socket.on('error', () => resolve(total));
        socket.on('connect', more);
      });
    };
    // The engine runs in this process (test/support/engine.ts): its RSS is this process's. A first, short flood grows
    // the JavaScript heap's young generation to what handling CNXNs at full speed takes, old bridge or new, so that what
    // is measured after it is what the flood leaves behind.
    await flood(1000, Infinity);
    for (const socket of floods.splice(0)) socket.destroy();
    await delay(200);
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    try {
      const sent = await flood(15_000, before + 80 * MIB);
      // Then many connections, each with a few CNXNs and never a read.
      const few = Buffer.concat(Array.from({ length: 32 }, () => cnxn()));
      for (let i = 0; i < 200; i++) {
        const socket = connect({ host: '127.0.0.1', port }, () => socket.write(few));
        socket.on('error', () => undefined);
        floods.push(socket);
      }
      // Whatever the engine took in, it has had time to answer (or to hold back).
      await delay(1000);
      const grown = Math.round((peak - before) / MIB);
      expect(grown, `engine grew by ${grown} MB after ${Math.round(sent / MIB)} MB of CNXNs (${sent / small.length} of them)`).toBeLessThan(50);
    } finally {
      clearInterval(sampler);
      for (const socket of floods) socket.destroy();
    }
    // The holder still gets in.
    expect((await mine.run(['connect', address], { timeoutMs: 20_000 })).stdout.toString()).toContain(`connected to ${address}`);
    await mine.run(['disconnect', address]);
  }, 60_000);

  it('only signed-in keys take the 8 slots: a ninth is dropped at sign-in, and a slot given back is taken again', async () => {
    const hosts = Array.from({ length: ADB_BRIDGE_LIMITS.signedIn }, () => new RawHost(port));
    try {
      await Promise.all(hosts.map((h) => h.signIn(myKey)));
      const ninth = new RawHost(port);
      await expect(ninth.signIn(myKey)).rejects.toThrow(/closed while waiting for the CNXN of a signed-in host/);
      hosts.pop()!.destroy();
      await waitFor('a slot to be given back', async () => {
        const tryIn = new RawHost(port);
        const ok = await tryIn.signIn(myKey).then(() => true, () => false);
        tryIn.destroy();
        return ok;
      });
    } finally {
      for (const host of hosts) host.destroy();
    }
  }, 30_000);

  it('a signed-in holder\'s 2,000 OPENs on one connection: refused past the cap, the lab\'s adb server untouched by the rest', async () => {
    const cap = ADB_BRIDGE_LIMITS.streamsPerConnection;
    const before = connectionsTo(lab.adb.port);
    const host = new RawHost(port);
    try {
      await host.signIn(myKey);
      const opens = Buffer.concat(
        Array.from({ length: 2000 }, (_, i) => encodeMessage({ command: A_OPEN, arg0: i + 1, arg1: 0, data: Buffer.from('sync:\0') }, false)),
      );
      host.socket.write(opens);
      const answers = () => host.received.filter((m) => (m.command === A_OKAY || m.command === A_CLSE) && m.arg1 >= 1 && m.arg1 <= 2000);
      await host.until('an answer to every OPEN', () => answers().length >= 2000, 20_000);
      const okays = answers().filter((m) => m.command === A_OKAY).length;
      const during = connectionsTo(lab.adb.port);
      expect(okays, 'streams opened').toBeLessThanOrEqual(cap);
      expect(okays, 'streams opened').toBeGreaterThan(0);
      expect(answers().filter((m) => m.command === A_CLSE).length).toBe(2000 - okays);
      // One upstream socket per stream opened, a few more for whoever else talks to the lab's adb server.
      expect(during - before, `connections to the lab's adb server: ${before} before, ${during} during`).toBeLessThanOrEqual(cap + 4);
      expect(host.closed).toBe(false);
    } finally {
      host.destroy();
    }
    await waitFor('the relayed streams to close upstream', () => connectionsTo(lab.adb.port) <= before + 4, 10_000);
  }, 60_000);
});
