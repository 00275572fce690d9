import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import type { Duplex, Readable } from 'node:stream';
import '../android/adbkit-first.js';

/**
 * Where usbmuxd listens: its Unix socket (the default on Linux and macOS), a TCP address (`host:port`), or a
 * usbmuxd reached some other way: `open` gives a new connection to it each time (a provider's, over SSH).
 */
export type UsbmuxdAddress = { path: string } | { host: string; port: number } | { name: string; open: () => Promise<Duplex> };

export const DEFAULT_USBMUXD_SOCKET = '/var/run/usbmuxd';

/** libusbmuxd's USBMUXD_SOCKET_ADDRESS format: `host:port`, `UNIX:/path`, or a bare path. */
export function parseUsbmuxdAddress(text: string): UsbmuxdAddress {
  const unix = /^unix:(.+)$/i.exec(text);
  if (unix) return { path: unix[1]! };
  if (text.startsWith('/')) return { path: text };
  const m = /^(.+):(\d{1,5})$/.exec(text);
  if (!m || Number(m[2]) > 65535) throw new Error(`A usbmuxd address is host:port, UNIX:/path or /path, not "${text}"`);
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) };
}

export function formatUsbmuxdAddress(address: UsbmuxdAddress): string {
  if ('open' in address) return address.name;
  return 'path' in address ? `UNIX:${address.path}` : `${address.host}:${address.port}`;
}

/** The parts of appium-ios-device (CommonJS, untyped where we use it) this fleet calls. */
export interface UsbmuxClient {
  listDevices(timeout?: number): Promise<Array<{ DeviceID: number; Properties: { SerialNumber: string; DeviceID: number } }>>;
  readPairRecord(udid: string, timeout?: number): Promise<Record<string, unknown> | null>;
  connectLockdown(udid: string, timeout?: number): Promise<LockdownClient>;
  connect(deviceId: number, port: number, timeout?: number): Promise<Socket>;
  close(): void;
  _sendPlist(message: { tag: number; payload: Record<string, unknown> }): void;
  _decoder: EventEmitter;
  _socketClient: Socket;
}
export interface LockdownClient {
  getValue(query?: { Domain?: string; Key?: string }, timeout?: number): Promise<unknown>;
  close(): void;
}
export interface AfcClient {
  createDirectory(path: string): Promise<void>;
  /** AFC's RemovePathAndContents. */
  deleteDirectory(path: string): Promise<void>;
  /** The names in a folder, "." and ".." included. */
  listDirectory(path: string): Promise<string[]>;
  createWriteStream(path: string, opts?: { autoDestroy?: boolean }): Promise<NodeJS.WritableStream>;
  createReadStream(path: string, opts?: { autoDestroy?: boolean }): Promise<Readable>;
  getFileInfo(path: string): Promise<{ size: number; mtimeMs: number; isDirectory(): boolean; isFile(): boolean }>;
  close(): void;
}
export interface InstallationProxyClient {
  installApplication(path: string, options?: Record<string, unknown>, timeout?: number): Promise<Array<Record<string, unknown>>>;
  uninstallApplication(bundleId: string, timeout?: number): Promise<Array<Record<string, unknown>>>;
  listApplications(opts?: { applicationType?: string; returnAttributes?: string[] }): Promise<Record<string, Record<string, unknown>>>;
  lookupApplications(opts: { bundleIds: string[] }): Promise<Record<string, Record<string, unknown>>>;
  close(): void;
}
/** A DTX message as appium-ios-device decodes it: `selector` is the call's selector or the reply's object. */
export interface DtxReply {
  selector: unknown;
  identifier: number;
  conversationIndex: number;
  auxiliaries: unknown[];
}
/** appium-ios-device's DTX client (instruments and testmanagerd share it). */
export interface DtxClient {
  callChannel(channel: string, selector: string, ...aux: unknown[]): Promise<DtxReply>;
  _callChannel(sync: boolean, code: number, selector: string, ...aux: unknown[]): Promise<DtxReply | undefined>;
  registerSelectorCallback(selector: string, callback: (message: DtxReply) => void): void;
  registerLifecycleCallback(event: string, callback: () => void): void;
  close(): void;
  _replyQueues: Record<number, DtxReply[]>;
  _nextIdentifier: number;
  _encoder: NodeJS.WritableStream;
  _decoder: EventEmitter;
}
export interface HouseArrestClient {
  vendContainer(bundleId: string): Promise<AfcClient>;
  vendDocuments(bundleId: string): Promise<AfcClient>;
  close(): void;
}
export interface SyslogClient {
  start(onLine: (line: string) => void): void;
  close(): void;
}
export interface AppiumIosDevice {
  Usbmux: new (socket: Socket) => UsbmuxClient;
  utilities: {
    startLockdownSession(udid: string, socket: Socket): Promise<LockdownClient>;
  };
  getDefaultSocket(opts: { socketPath?: string; socketHost?: string; socketPort?: number; timeout?: number }): Promise<Socket>;
  AfcService: new (socket: Socket) => AfcClient;
  InstallationProxyService: new (plistService: unknown) => InstallationProxyClient;
  SyslogService: new (socket: Socket) => SyslogClient;
  PlistService: new (socket: Socket) => unknown;
  upgradeToSSL(socket: Socket, key: unknown, cert: unknown): Socket;
  enableSSLHandshakeOnly(socket: Socket, key: unknown, cert: unknown): Promise<Socket>;
  HouseArrestService: new (socket: Socket) => HouseArrestClient;
  InstrumentService: new (socket: Socket) => DtxClient;
  TestmanagerdService: new (socket: Socket) => DtxClient;
  DTXMessageAuxBuffer: new () => { appendObject(value: unknown): void };
  NSUUID: new (uuid: string) => unknown;
  XCTestConfiguration: new (data: Record<string, unknown>) => { getBytes(): Buffer };
}

let loaded: AppiumIosDevice | undefined;

/**
 * appium-ios-device, loaded on first use: it pulls in @appium/support (most of a second), which a lab without
 * iPhones never needs. Its logger (npmlog, verbose by default) is silenced: the engine logs what matters itself.
 */
export function appiumIosDevice(): AppiumIosDevice {
  if (loaded) return loaded;
  const require = createRequire(import.meta.url);
  const main = require('appium-ios-device') as Omit<AppiumIosDevice, 'getDefaultSocket'>;
  const { log } = require('appium-ios-device/build/lib/logger.js') as { log: { level: string } };
  log.level = 'silent';
  /** A class or function that the package exports from one of its own modules only. */
  const from = <K extends keyof AppiumIosDevice>(path: string, name: K) =>
    (require(`appium-ios-device/build/lib/${path}`) as Record<K, AppiumIosDevice[K]>)[name];
  loaded = {
    ...main,
    getDefaultSocket: from('usbmux/index.js', 'getDefaultSocket'),
    AfcService: from('afc/index.js', 'AfcService'),
    InstallationProxyService: from('installation-proxy/index.js', 'InstallationProxyService'),
    SyslogService: from('syslog/index.js', 'SyslogService'),
    PlistService: from('plist-service/index.js', 'PlistService'),
    upgradeToSSL: from('ssl-helper.js', 'upgradeToSSL'),
    enableSSLHandshakeOnly: from('ssl-helper.js', 'enableSSLHandshakeOnly'),
    HouseArrestService: from('house-arrest/index.js', 'HouseArrestService'),
    InstrumentService: from('instrument/index.js', 'InstrumentService'),
    TestmanagerdService: from('testmanagerd/index.js', 'TestmanagerdService'),
    DTXMessageAuxBuffer: from('instrument/headers.js', 'DTXMessageAuxBuffer'),
    NSUUID: from('instrument/transformer/nskeyed.js', 'NSUUID'),
    XCTestConfiguration: from('instrument/transformer/nskeyed.js', 'XCTestConfiguration'),
  };
  return loaded;
}

/** A fresh connection to usbmuxd: each Connect uses up one, as in every usbmuxd client. */
export async function usbmuxdSocket(address: UsbmuxdAddress, timeout = 5000): Promise<Socket> {
  const { getDefaultSocket } = appiumIosDevice();
  // appium-ios-device reads and writes it as a stream; TLS upgrades wrap any duplex.
  const socket = await ('open' in address
    ? (address.open() as unknown as Promise<Socket>)
    : 'path' in address
    ? getDefaultSocket({ socketPath: address.path, timeout })
    : getDefaultSocket({ socketHost: address.host, socketPort: address.port, timeout }));
  // appium-ios-device listens for no socket errors: a phone pulled out (ECONNRESET) would otherwise crash the engine.
  // A failed socket ends its requests anyway, which time out or fail where they are awaited.
  socket.on('error', () => undefined);
  return socket;
}

export async function openUsbmux(address: UsbmuxdAddress): Promise<UsbmuxClient> {
  return new (appiumIosDevice().Usbmux)(await usbmuxdSocket(address));
}

/** One device event from usbmuxd's Listen stream. */
export type MuxEvent = { type: 'attached'; deviceId: number; udid: string; connectionType: string } | { type: 'detached'; deviceId: number };

/**
 * usbmuxd's `Listen`: the connection turns into a stream of Attached and Detached messages, the way libusbmuxd's
 * usbmuxd_events_subscribe tracks plugging with no polling. appium-ios-device has no call for it, so it is sent with
 * its encoder, and its decoder's messages are read as they come.
 */
export async function listen(address: UsbmuxdAddress, onEvent: (event: MuxEvent) => void): Promise<{ close(): void; closed: Promise<void> }> {
  const mux = await openUsbmux(address);
  const closed = new Promise<void>((resolve) => {
    mux._socketClient.once('close', () => resolve());
    mux._socketClient.once('error', () => resolve());
  });
  const tag = 1;
  const accepted = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('usbmuxd did not answer Listen within 5 s')), 5000);
    mux._decoder.on('data', (message: { header: { tag: number }; payload: Record<string, unknown> }) => {
      const p = message.payload;
      if (p.MessageType === 'Result' && message.header.tag === tag) {
        clearTimeout(timer);
        if (p.Number === 0) resolve();
        else reject(new Error(`usbmuxd refused Listen (${String(p.Number)})`));
      } else if (p.MessageType === 'Attached') {
        const props = p.Properties as { SerialNumber: string; ConnectionType?: string };
        onEvent({ type: 'attached', deviceId: Number(p.DeviceID), udid: props.SerialNumber, connectionType: props.ConnectionType ?? 'USB' });
      } else if (p.MessageType === 'Detached') {
        onEvent({ type: 'detached', deviceId: Number(p.DeviceID) });
      }
    });
    void closed.then(() => reject(new Error('usbmuxd closed the connection')));
  });
  mux._sendPlist({ tag, payload: { MessageType: 'Listen', ProgName: 'benchtop', ClientVersionString: 'benchtop', kLibUSBMuxVersion: 3 } });
  try {
    await accepted;
  } catch (error) {
    mux.close();
    throw error;
  }
  return { close: () => mux.close(), closed };
}

interface PlistServiceInternals {
  replyQueue: unknown[];
  _decoder: EventEmitter;
  _socketClient: Socket;
  receivePlist(timeout?: number): Promise<unknown>;
}

/**
 * The first reply `take` finds, looked for at once and again after each message the decoder reads (this listener is
 * registered after the service's own, which queues the reply first), or `timedOut`'s error. appium-ios-device's
 * services poll their reply queues on a timer instead (every 50 ms for plist services, 500 ms for DTX), which adds
 * that much to every message of a lockdown, installation_proxy or XCTest exchange.
 */
export function replyAsDecoded<T>(decoder: EventEmitter, take: () => T | undefined, timeoutMs: number, timedOut: () => Error): Promise<T> {
  return new Promise((resolve, reject) => {
    const queued = take();
    if (queued !== undefined) return resolve(queued);
    const onData = () => {
      const next = take();
      if (next === undefined) return;
      clearTimeout(timer);
      decoder.off('data', onData);
      resolve(next);
    };
    const timer = setTimeout(() => {
      decoder.off('data', onData);
      reject(timedOut());
    }, timeoutMs);
    decoder.on('data', onData);
  });
}

/** A PlistService whose replies are taken as they are decoded. */
function answerOnArrival(service: PlistServiceInternals): void {
  service.receivePlist = (timeout = 5000) =>
    replyAsDecoded(service._decoder, () => service.replyQueue.shift(), timeout, () => new Error(`Failed to receive any data within the timeout: ${timeout}`));
}

type LockdownWithService = LockdownClient & {
  _plistService: PlistServiceInternals;
  startSession(hostId: unknown, systemBuid: unknown): Promise<unknown>;
  enableSessionSSL(key: unknown, cert: unknown): void;
  startService(name: string, timeout?: number): Promise<{ Port: number; EnableServiceSSL?: boolean }>;
};

/**
 * A lockdown session in TLS with the pair record usbmuxd keeps, as appium-ios-device's startLockdownSession opens
 * it, plus: replies taken on arrival, and an error listener on the TLS socket it swaps in (it has none, so a phone
 * pulled out mid-session would crash the process with ECONNRESET).
 */
async function lockdownSession(address: UsbmuxdAddress, udid: string): Promise<LockdownWithService> {
  const mux = await openUsbmux(address);
  try {
    const record = await mux.readPairRecord(udid);
    if (!record) throw new Error(`No pair record for ${udid}: the iPhone has not trusted this computer.`);
    const lockdown = (await mux.connectLockdown(udid)) as LockdownWithService;
    answerOnArrival(lockdown._plistService);
    await lockdown.startSession(record.HostID, record.SystemBUID);
    lockdown.enableSessionSSL(record.HostPrivateKey, record.HostCertificate);
    lockdown._plistService._socketClient.on('error', () => undefined);
    return lockdown;
  } catch (error) {
    mux.close();
    throw error;
  }
}

/**
 * Values from lockdownd inside one TLS session (the pair record from usbmuxd), each query's answer or undefined.
 * appium-ios-device pipes its TLS stream into the plist decoder a second time when a session starts, so each answer
 * arrives twice: the queue is emptied before every request, or the next request would read the previous answer.
 */
export async function readLockdownValues(
  address: UsbmuxdAddress,
  udid: string,
  queries: Array<{ Domain?: string; Key?: string }>,
): Promise<unknown[]> {
  const lockdown = await lockdownSession(address, udid);
  try {
    const values: unknown[] = [];
    for (const query of queries) {
      lockdown._plistService.replyQueue.length = 0;
      values.push(await lockdown.getValue(query).catch(() => undefined));
    }
    return values;
  } finally {
    lockdown.close();
  }
}


/**
 * Starts a lockdown service (com.apple.afc, installation_proxy, syslog_relay) and returns the connection to it:
 * StartService inside a TLS session, then a usbmuxd Connect to the port it names, in TLS when the phone asks.
 * appium-ios-device's own start*Service helpers reuse one usbmuxd socket for both steps when handed one, so the
 * steps are done here, each on its own usbmuxd connection.
 */
export async function startService(address: UsbmuxdAddress, udid: string, name: string, options: { handshakeOnly?: boolean } = {}): Promise<Socket> {
  const aid = appiumIosDevice();
  const lockdown = await lockdownSession(address, udid);
  let service: { Port: number; EnableServiceSSL?: boolean };
  try {
    lockdown._plistService.replyQueue.length = 0;
    service = await lockdown.startService(name);
  } finally {
    lockdown.close();
  }
  const mux = await openUsbmux(address);
  try {
    const device = (await mux.listDevices()).find((d) => d.Properties.SerialNumber === udid);
    if (!device) throw new Error(`The iPhone ${udid} is not attached.`);
    const record = service.EnableServiceSSL ? await mux.readPairRecord(udid) : null;
    const socket = await mux.connect(device.Properties.DeviceID, service.Port);
    socket.on('error', () => undefined);
    if (!record) return socket;
    // Before iOS 14, instruments and testmanagerd want a TLS handshake and then plain text on the same connection.
    if (options.handshakeOnly) return await aid.enableSSLHandshakeOnly(socket, record.HostPrivateKey, record.HostCertificate);
    const tls = aid.upgradeToSSL(socket, record.HostPrivateKey, record.HostCertificate);
    tls.on('error', () => undefined);
    return tls;
  } catch (error) {
    mux.close();
    throw error;
  }
}

export async function afcService(address: UsbmuxdAddress, udid: string): Promise<AfcClient> {
  return new (appiumIosDevice().AfcService)(await startService(address, udid, 'com.apple.afc'));
}

/** Why house_arrest would not open an app's Documents: the phone's Error, ApplicationLookupFailed and the like. */
export class HouseArrestRefused extends Error {
  constructor(readonly reason: string, bundleId: string) {
    super(`house_arrest would not open ${bundleId}'s Documents (${reason}).`);
  }
}

/**
 * AFC inside an app's data container, as ifuse --documents, afcclient --documents and pymobiledevice3 open it: lockdown
 * starts com.apple.mobile.house_arrest, VendDocuments names the app, and after its Status "Complete" the same
 * connection speaks AFC, with the app's Documents at /Documents. The phone refuses apps that are not installed
 * (ApplicationLookupFailed) and apps that do not share their Documents (InstallationLookupFailed).
 */
export async function documentsService(address: UsbmuxdAddress, udid: string, bundleId: string): Promise<AfcClient> {
  const houseArrest = new (appiumIosDevice().HouseArrestService)(await startService(address, udid, 'com.apple.mobile.house_arrest'));
  try {
    return await houseArrest.vendDocuments(bundleId);
  } catch (error) {
    houseArrest.close();
    // appium-ios-device words the phone's refusal as "... Error: <Error>".
    const reason = /Error: (\w+)$/.exec((error as Error).message)?.[1];
    throw reason ? new HouseArrestRefused(reason, bundleId) : error;
  }
}

export async function installationProxy(address: UsbmuxdAddress, udid: string): Promise<InstallationProxyClient> {
  const aid = appiumIosDevice();
  const service = new aid.PlistService(await startService(address, udid, 'com.apple.mobile.installation_proxy')) as PlistServiceInternals;
  answerOnArrival(service);
  return new aid.InstallationProxyService(service);
}

export async function syslogService(address: UsbmuxdAddress, udid: string): Promise<SyslogClient> {
  return new (appiumIosDevice().SyslogService)(await startService(address, udid, 'com.apple.syslog_relay'));
}

/**
 * Restarts the phone through com.apple.mobile.diagnostics_relay, as libimobiledevice's `idevicediagnostics restart`
 * does: `Restart` with WaitForDisconnect (the phone restarts once this connection closes, so the answer is read
 * first), then `Goodbye`. DisplayPass and DisplayFail are left out: they would put a dialog on the phone's screen.
 */
export async function restartDevice(address: UsbmuxdAddress, udid: string): Promise<void> {
  const aid = appiumIosDevice();
  const service = new aid.PlistService(await startService(address, udid, 'com.apple.mobile.diagnostics_relay')) as PlistServiceInternals & {
    sendPlistAndReceive(message: Record<string, unknown>, timeout?: number): Promise<Record<string, unknown> | undefined>;
    close(): void;
  };
  answerOnArrival(service);
  try {
    const answer = await service.sendPlistAndReceive({ Request: 'Restart', WaitForDisconnect: true });
    if (answer?.Status !== 'Success') throw new Error(`diagnostics_relay refused Restart (${String(answer?.Status ?? 'no answer')})`);
    // The phone restarts on hang-up whatever Goodbye answers.
    await service.sendPlistAndReceive({ Request: 'Goodbye' }).catch(() => undefined);
  } finally {
    service.close();
  }
}
