import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { connect as tlsConnect, TLSSocket } from 'node:tls';
import { createPairing, pairRecordOf, type Pairing } from '../../../../protocols/apple/pairing.js';
import { decodePlist, PlistChannel, type PlistDict } from '../../../../protocols/apple/plist-wire.js';
import { encodeMuxMessage, MUX_RESULT, muxResult, MuxReader, sendMux, serveMuxClient, swap16 } from '../../../../protocols/apple/usbmuxd-wire.js';
import type { UsbmuxdAddress } from './usbmux.js';

const LOCKDOWN_PORT = 62078;
const WDA_PORT = 8100;
/** ENOENT, as usbmuxd answers a pair record it does not have. */
const NO_RECORD = 2;
/** The lab's usbmuxd answers a query in milliseconds; one that has not answered in this long is not going to. */
const QUERY_TIMEOUT_MS = 10_000;
/** The shared query connection is closed when no query has come for this long, and opened again with the next. */
const QUERY_IDLE_MS = 5_000;

/** The lab's pairing with the phone, as the system usbmuxd keeps it: what the engine's side of each TLS session uses. */
export interface LabPairRecord {
  hostId: string;
  systemBuid: string;
  hostCertificate: string;
  hostPrivateKey: string;
}

function connectUpstream(address: UsbmuxdAddress): Promise<Socket> {
  // A provider's usbmuxd is a channel over SSH: a duplex that is used here as a socket is.
  if ('open' in address) return address.open() as unknown as Promise<Socket>;
  return new Promise((resolve, reject) => {
    const socket = 'path' in address ? connect({ path: address.path }) : connect({ host: address.host, port: address.port, noDelay: true });
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/**
 * One request to the system usbmuxd on a connection of its own; resolves to its reply. With `tunnel`, a Connect that
 * succeeds resolves with the socket, which from then on is the phone's port.
 */
async function upstreamRequest(address: UsbmuxdAddress, request: PlistDict): Promise<{ reply: PlistDict; socket: Socket }> {
  const socket = await connectUpstream(address);
  const reader = new MuxReader();
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      let messages;
      try {
        messages = reader.push(chunk);
      } catch (error) {
        socket.destroy();
        return reject(error);
      }
      const first = messages[0];
      if (!first) return;
      socket.off('data', onData);
      socket.off('error', reject);
      socket.pause();
      const rest = reader.rest();
      if (rest.length) socket.unshift(rest);
      resolve({ reply: first.message, socket });
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(encodeMuxMessage(1, { ClientVersionString: 'benchtop', ProgName: 'benchtop', ...request }));
  });
}

/** A query on a connection of its own, for a one-off before any private usbmuxd exists. */
async function upstreamQuery(address: UsbmuxdAddress, request: PlistDict): Promise<PlistDict> {
  const { reply, socket } = await upstreamRequest(address, request);
  socket.destroy();
  return reply;
}

/** The lab's pair record for the phone, read from the system usbmuxd; undefined while the phone trusts no computer. */
export async function readLabPairRecord(address: UsbmuxdAddress, udid: string): Promise<LabPairRecord | undefined> {
  const reply = await upstreamQuery(address, { MessageType: 'ReadPairRecord', PairRecordID: udid });
  if (!(reply.PairRecordData instanceof Uint8Array)) return undefined;
  const record = decodePlist(Buffer.from(reply.PairRecordData));
  const text = (v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : String(v ?? ''));
  return { hostId: text(record.HostID), systemBuid: text(record.SystemBUID), hostCertificate: text(record.HostCertificate), hostPrivateKey: text(record.HostPrivateKey) };
}

/**
 * The queries of every client of one checkout (ListDevices, ReadBUID) on one connection to the lab's usbmuxd, one at
 * a time, and a query already waiting its turn answers the same query asked again: however many clients ask, and
 * however fast, the lab's usbmuxd sees one connection and a query or two at a time. It closes when idle and opens
 * again with the next query.
 */
class SharedQueries {
  private socket: Socket | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly waiting = new Map<string, Promise<PlistDict>>();
  private tag = 0;
  private answer: ((message: PlistDict | Error) => void) | undefined;
  private idle: NodeJS.Timeout | undefined;

  constructor(private readonly address: UsbmuxdAddress, private readonly adopt: (socket: Socket) => Socket) {}

  query(request: PlistDict): Promise<PlistDict> {
    // Asked again before the first asking went out: one answer serves both.
    const key = JSON.stringify(request);
    const waiting = this.waiting.get(key);
    if (waiting) return waiting;
    const result = this.queue.then(() => {
      this.waiting.delete(key);
      return this.send(request);
    });
    this.waiting.set(key, result);
    this.queue = result.catch(() => undefined);
    return result;
  }

  private async send(request: PlistDict): Promise<PlistDict> {
    clearTimeout(this.idle);
    if (!this.socket || this.socket.destroyed) this.socket = await this.open();
    const socket = this.socket;
    if (socket.destroyed) throw new Error('the lab\'s usbmuxd hung up');
    const tag = ++this.tag;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.answer?.(new Error('the lab\'s usbmuxd did not answer'));
        socket.destroy();
      }, QUERY_TIMEOUT_MS);
      this.answer = (message) => {
        clearTimeout(timer);
        this.answer = undefined;
        this.idle = setTimeout(() => socket.destroy(), QUERY_IDLE_MS).unref();
        if (message instanceof Error) reject(message);
        else resolve(message);
      };
      socket.write(encodeMuxMessage(tag, { ClientVersionString: 'benchtop', ProgName: 'benchtop', ...request }));
    });
  }

  private async open(): Promise<Socket> {
    const socket = this.adopt(await connectUpstream(this.address));
    const reader = new MuxReader();
    socket.on('data', (chunk: Buffer) => {
      try {
        for (const { tag, message } of reader.push(chunk)) if (tag === this.tag) this.answer?.(message);
      } catch {
        socket.destroy();
      }
    });
    socket.once('close', () => {
      if (this.socket === socket) this.socket = undefined;
      clearTimeout(this.idle);
      this.answer?.(new Error('the lab\'s usbmuxd hung up'));
    });
    return socket;
  }
}

/** What one checkout's private usbmuxd lets in. */
export interface PrivateUsbmuxdLimits {
  /** Client connections at once, on its two ports together. */
  connections: number;
  /** Client connections at once from one address: fewer than `connections`, so that no one peer takes them all. */
  connectionsPerPeer: number;
  /** A usbmuxd client that has not sent a whole request within this long of opening, or of starting one, is closed. */
  idleMs: number;
}

/** libimobiledevice's tools use one to three connections each, Appium about ten (tunnels and WebDriverAgent). */
export const PRIVATE_USBMUXD_LIMITS: PrivateUsbmuxdLimits = { connections: 64, connectionsPerPeer: 32, idleMs: 10_000 };

export interface PrivateUsbmuxdOptions {
  upstream: UsbmuxdAddress;
  udid: string;
  host: string;
  lab: LabPairRecord;
  /** A pairing made for this checkout alone: what ReadPairRecord hands out. Its keys open nothing after release. */
  checkout: Pairing;
  checkoutRecord: Buffer;
  onTraffic?: () => void;
  log: (message: string) => void;
  limits?: Partial<PrivateUsbmuxdLimits>;
  /**
   * How the engine reaches WebDriverAgent's port on the phone, when not through usbmuxd: an iOS 17.4+ phone whose WDA
   * the lab started through a go-ios tunnel is reached through that tunnel (ios-fleet.ts phonePort). Undefined: usbmuxd.
   */
  wdaRoute?: () => Promise<Socket> | undefined;
}

interface Client {
  socket: Socket;
  address: string;
  peer: string;
  since: number;
}

/**
 * A usbmuxd for one held iPhone. It shows and connects only that phone (Listen, ListDevices, Connect, ReadBUID), and
 * hands out a pair record made for this checkout, never the lab's: lockdown sessions are carried through the engine,
 * which speaks TLS to the client with the checkout's keys and to the phone with the lab's, so the lab's pairing keys
 * never leave the box and the checkout's open nothing once the listener is gone. Services that ask for TLS
 * (EnableServiceSSL) are carried the same way; the others are plain tunnels. A second port of its own relays
 * WebDriverAgent (8100 on the phone), for Appium's webDriverAgentUrl.
 *
 * Nothing on either port needs a key, so what a stranger can make it do is bounded: connections per checkout and per
 * peer (past them a connection is closed at once), a deadline for a request begun (serveMuxClient), plists decoded
 * within their limits, and upstream connections to the lab's usbmuxd: one shared by every query, and at most one per
 * client connection besides (its Listen, or its tunnel once it has connected), so never more than the client
 * connections plus one.
 */
export class PrivateUsbmuxd {
  private servers: Server[] = [];
  private readonly clients = new Set<Client>();
  private readonly upstreams = new Set<Socket>();
  /** Client connections that asked to Listen, with their upstream Listen once it is open. */
  private readonly listens = new Map<Socket, Socket | undefined>();
  private readonly limits: PrivateUsbmuxdLimits;
  private readonly queries: SharedQueries;
  /** Phone ports that lockdown started with EnableServiceSSL during this checkout. */
  private readonly sslPorts = new Set<number>();
  private closed = false;

  constructor(private readonly options: PrivateUsbmuxdOptions) {
    this.limits = { ...PRIVATE_USBMUXD_LIMITS, ...options.limits };
    this.queries = new SharedQueries(options.upstream, (socket) => this.upstream(socket));
  }

  /**
   * Listens on both ports, or on neither: a port another program holds leaves this end ready to start again. Without
   * a WDA port, usbmuxd's alone (the lab's own go-ios reaches WDA through its tunnel, not through this).
   */
  async start(muxPort: number, wdaPort?: number): Promise<void> {
    try {
      await this.listen(muxPort, (socket) => this.serve(socket));
      if (wdaPort !== undefined) await this.listen(wdaPort, (socket) => void this.relayWda(socket));
    } catch (error) {
      for (const server of this.servers.splice(0)) server.close();
      throw error;
    }
  }

  /** The port its usbmuxd listens on (the one the system chose, when started on port 0). */
  muxPort(): number | undefined {
    return (this.servers[0]?.address() as AddressInfo | null)?.port;
  }

  connections(): Array<{ peer: string; since: number }> {
    return [...this.clients].map(({ peer, since }) => ({ peer, since }));
  }

  close(): void {
    this.closed = true;
    for (const server of this.servers) server.close();
    for (const client of this.clients) client.socket.destroy();
    for (const upstream of this.upstreams) upstream.destroy();
    this.clients.clear();
    this.upstreams.clear();
  }

  private listen(port: number, accept: (socket: Socket) => void): Promise<void> {
    const server = createServer((socket) => {
      socket.on('error', () => undefined);
      if (this.closed || !this.admit(socket)) return void socket.destroy();
      accept(socket);
    });
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: this.options.host, port }, () => {
        server.off('error', reject);
        server.on('error', (error) => this.options.log(`private usbmuxd for ${this.options.udid}: ${error.message}`));
        this.servers.push(server);
        resolve();
      });
    });
  }

  /** Takes the connection in as a client, unless the checkout or its peer already has as many as it may. */
  private admit(socket: Socket): boolean {
    const address = socket.remoteAddress ?? '';
    if (this.clients.size >= this.limits.connections) return false;
    if ([...this.clients].filter((c) => c.address === address).length >= this.limits.connectionsPerPeer) return false;
    const client: Client = { socket, address, peer: `${address}:${socket.remotePort}`, since: Date.now() };
    this.clients.add(client);
    socket.on('close', () => this.clients.delete(client));
    return true;
  }

  private upstream(socket: Socket): Socket {
    this.upstreams.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => this.upstreams.delete(socket));
    if (this.closed) socket.destroy();
    return socket;
  }

  /** The held phone's entry in the system usbmuxd's list, or undefined while it is not attached. */
  private async held(): Promise<PlistDict | undefined> {
    const reply = await this.queries.query({ MessageType: 'ListDevices' });
    const list = Array.isArray(reply.DeviceList) ? (reply.DeviceList as PlistDict[]) : [];
    return list.find((d) => (d.Properties as PlistDict | undefined)?.SerialNumber === this.options.udid);
  }

  private serve(socket: Socket): void {
    const { udid } = this.options;
    socket.once('close', () => this.listens.delete(socket));
    serveMuxClient(socket, {
      request: (request, reply) => {
        const fail = (error: Error) => {
          this.options.log(`private usbmuxd for ${udid}: ${error.message}`);
          socket.destroy();
        };
        switch (request.MessageType) {
          case 'ListDevices':
            return void this.held().then((d) => reply({ DeviceList: d ? [d] : [] }), fail);
          case 'Listen':
            return void this.watch(socket, reply).catch(fail);
          case 'ReadBUID':
            return void this.queries.query({ MessageType: 'ReadBUID' }).then(reply, fail);
          case 'ReadPairRecord':
            return reply(request.PairRecordID === udid ? { PairRecordData: this.options.checkoutRecord } : muxResult(NO_RECORD));
          // The lab's own records are not the user's to change: accepted and dropped, as if saved.
          case 'SavePairRecord':
          case 'DeletePairRecord':
            return reply(muxResult(MUX_RESULT.OK));
          case 'ListListeners':
            return reply({ ListenerList: [] });
          default:
            return reply(muxResult(MUX_RESULT.BADCOMMAND));
        }
      },
      connect: (request, reply, handOver) => this.connect(socket, request, reply, handOver),
    }, { idleMs: this.limits.idleMs });
  }

  /** Listen: the system usbmuxd's events about the held phone only, on one upstream Listen however often it is asked. */
  private async watch(socket: Socket, reply: (payload: PlistDict) => void): Promise<void> {
    if (this.listens.has(socket)) return reply(muxResult(MUX_RESULT.OK));
    this.listens.set(socket, undefined);
    const up = this.upstream(await connectUpstream(this.options.upstream));
    // Closed, or turned into a tunnel, while the upstream was opening.
    if (!this.listens.has(socket)) return void up.destroy();
    this.listens.set(socket, up);
    socket.once('close', () => up.destroy());
    // Unless the connection became a tunnel, which ended the Listen itself.
    up.once('close', () => this.listens.get(socket) === up && socket.destroy());
    const reader = new MuxReader();
    let heldId: unknown;
    let answered = false;
    up.on('data', (chunk: Buffer) => {
      let messages;
      try {
        messages = reader.push(chunk);
      } catch (error) {
        this.options.log(`private usbmuxd for ${this.options.udid}: ${(error as Error).message}`);
        return void up.destroy();
      }
      for (const { message } of messages) {
        if (!answered) {
          answered = true;
          reply(message);
          continue;
        }
        if (message.MessageType === 'Attached' && (message.Properties as PlistDict | undefined)?.SerialNumber === this.options.udid) {
          heldId = message.DeviceID;
          sendMux(socket, 0, message);
        } else if (message.MessageType === 'Detached' && message.DeviceID === heldId) {
          sendMux(socket, 0, message);
        }
      }
    });
    up.write(encodeMuxMessage(1, { MessageType: 'Listen', ClientVersionString: 'benchtop', ProgName: 'benchtop' }));
  }

  private async connect(socket: Socket, request: PlistDict, reply: (payload: PlistDict) => void, handOver: () => void): Promise<boolean> {
    const held = await this.held().catch(() => undefined);
    if (!held || request.DeviceID !== held.DeviceID) {
      reply(muxResult(MUX_RESULT.BADDEV));
      return false;
    }
    let tunnel: Socket;
    try {
      const opened = await upstreamRequest(this.options.upstream, { MessageType: 'Connect', DeviceID: held.DeviceID, PortNumber: request.PortNumber });
      if (opened.reply.Number !== MUX_RESULT.OK) {
        opened.socket.destroy();
        reply(opened.reply);
        return false;
      }
      tunnel = this.upstream(opened.socket);
    } catch {
      reply(muxResult(MUX_RESULT.CONNREFUSED));
      return false;
    }
    if (socket.destroyed) {
      tunnel.destroy();
      return true;
    }
    reply(muxResult(MUX_RESULT.OK));
    handOver();
    // A tunnel carries the phone's bytes alone: the connection's Listen, if it asked for one, ends here.
    const listen = this.listens.get(socket);
    this.listens.delete(socket);
    listen?.destroy();
    const port = swap16(Number(request.PortNumber));
    if (port === LOCKDOWN_PORT) this.lockdown(socket, tunnel);
    else if (this.sslPorts.has(port)) this.pipe(this.clientTls(socket), this.phoneTls(tunnel));
    else this.pipe(socket, tunnel);
    return true;
  }

  private pipe(a: Socket, b: Socket): void {
    const traffic = this.options.onTraffic;
    if (traffic) {
      a.on('data', traffic);
      b.on('data', traffic);
    }
    a.pipe(b);
    b.pipe(a);
    a.once('close', () => b.destroy());
    b.once('close', () => a.destroy());
    a.resume();
    b.resume();
  }

  /** The TLS server the client meets: the checkout pairing's device certificate. */
  private clientTls(socket: Socket): TLSSocket {
    const { checkout } = this.options;
    const tls = new TLSSocket(socket, { isServer: true, key: checkout.devicePrivateKey, cert: checkout.deviceCertificate, requestCert: true, rejectUnauthorized: false });
    tls.on('error', () => socket.destroy());
    return tls;
  }

  /** The TLS client the phone meets: the lab's host certificate, as the lab's own sessions use. */
  private phoneTls(socket: Socket): TLSSocket {
    const { lab } = this.options;
    const tls = tlsConnect({ socket, key: lab.hostPrivateKey, cert: lab.hostCertificate, rejectUnauthorized: false, minVersion: 'TLSv1' });
    tls.on('error', () => socket.destroy());
    return tls;
  }

  /**
   * lockdownd, carried: requests go to the phone with the lab's HostID in place of the checkout's, Pair and
   * ValidatePair are answered here (the phone trusts the lab, not the checkout), and a session's TLS is ended on
   * each side with that side's keys. StartService replies that ask for TLS mark their port for Connect above.
   */
  private lockdown(socket: Socket, tunnel: Socket): void {
    const { checkout, lab } = this.options;
    socket.once('close', () => tunnel.destroy());
    tunnel.once('close', () => socket.destroy());
    let startingSession = false;
    const toPhone = new PlistChannel(tunnel, (message) => {
      if (message.Request === 'StartService' && message.EnableServiceSSL === true && typeof message.Port === 'number') this.sslPorts.add(message.Port);
      toClient.send(message);
      if (startingSession && message.Request === 'StartSession') {
        startingSession = false;
        if (message.EnableSessionSSL !== true || message.Error) return;
        toClient.detach();
        toPhone.detach();
        const clientSide = this.clientTls(socket);
        const phoneSide = this.phoneTls(tunnel);
        clientSide.once('close', () => phoneSide.destroy());
        phoneSide.once('close', () => clientSide.destroy());
        // The host ends TLS after StopSession and goes on in plain text; the phone hangs up there, and so do we.
        clientSide.on('end', () => socket.destroy());
        toClient.rebind(clientSide);
        toPhone.rebind(phoneSide);
      }
    });
    const toClient = new PlistChannel(socket, (message) => {
      this.options.onTraffic?.();
      const name = String(message.Request ?? '');
      if (name === 'Pair' || name === 'ValidatePair') return toClient.send({ Request: name });
      if (name === 'StartSession') {
        if (message.HostID !== checkout.hostId) return toClient.send({ Request: name, Error: 'InvalidHostID' });
        startingSession = true;
        return toPhone.send({ ...message, HostID: lab.hostId, SystemBUID: lab.systemBuid });
      }
      toPhone.send(message);
    });
    socket.resume();
    tunnel.resume();
  }

  /** webDriverAgentUrl's port: each connection is a tunnel to WDA on the phone. */
  private async relayWda(socket: Socket): Promise<void> {
    socket.pause();
    try {
      const routed = this.options.wdaRoute?.();
      if (routed) {
        const phone = await routed;
        if (socket.destroyed || this.closed) return void phone.destroy();
        return this.pipe(socket, this.upstream(phone));
      }
      const held = await this.held();
      if (!held) return void socket.destroy();
      const opened = await upstreamRequest(this.options.upstream, { MessageType: 'Connect', DeviceID: held.DeviceID, PortNumber: swap16(WDA_PORT) });
      if (opened.reply.Number !== MUX_RESULT.OK) {
        opened.socket.destroy();
        return void socket.destroy();
      }
      if (socket.destroyed || this.closed) return void opened.socket.destroy();
      this.pipe(socket, this.upstream(opened.socket));
    } catch {
      socket.destroy();
    }
  }
}

/**
 * go-ios's usbmuxd for a provider's iPhone. go-ios takes a usbmuxd address (USBMUXD_SOCKET_ADDRESS), not a channel
 * over SSH, so the lab's own go-ios gets remote connect's private usbmuxd on a loopback port the system picks: it shows
 * and connects that one phone only (another UDID is not listed, and a Connect to it is refused), relays to the
 * provider's usbmuxd over SSH, and hands out a pairing made for this tunnel, never the provider's record, which the
 * listener's lifetime bounds. It lives as long as the tunnel it serves: close() leaves no listener or connection.
 */
export async function startLoopbackUsbmuxd(upstream: UsbmuxdAddress, udid: string, log: (message: string) => void): Promise<{ address: string; close(): void }> {
  const lab = await readLabPairRecord(upstream, udid);
  if (!lab) throw new Error(`the provider's usbmuxd has no pairing with ${udid} (tap Trust on it first)`);
  const checkout = await createPairing(lab.systemBuid);
  const usbmuxd = new PrivateUsbmuxd({ upstream, udid, host: '127.0.0.1', lab, checkout, checkoutRecord: pairRecordOf(checkout), log });
  await usbmuxd.start(0);
  return { address: `127.0.0.1:${usbmuxd.muxPort()}`, close: () => usbmuxd.close() };
}
