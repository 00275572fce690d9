import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { NotAnAdbKey, parseAdbPublicKey, type AdbPublicKey } from '../../../protocols/adb/keys.js';
import { conflict, invalid, notFound } from '../domain/errors.js';
import { reachableOrigin } from '../domain/reachable-origin.js';
import { AdbBridge } from '../fleet/android/adb-bridge.js';
import type { Socket } from 'node:net';
import type { UsbmuxdAddress } from '../fleet/ios/usbmux.js';
import { openDeviceService, type AdbServerAddress } from '../../../protocols/adb/host.js';
import type { PhoneSource } from '../fleet/types.js';
import type { AdbKeyRow } from '../store/adb-keys.js';
import type { DeviceAllocationRow } from '../store/devices.js';
import type { Stores } from '../store/index.js';
import { requireRole } from './auth.js';
import type { DeviceControl, DeviceTarget } from './device-control.js';
import type { Caller, Clock, Scope } from './scope.js';

export interface RemoteConnectOptions {
  /** The ports listeners take, outside adb's emulator range 5555-5585. */
  ports: { first: number; last: number };
  /** How long a released port rests before reuse: the user's adb keeps redialling it for a while. */
  restMs: number;
  /** Where new listeners listen: loopback, or the LAN address while the lab owner has remote-connect on the LAN on. */
  bindHost: () => string;
  /** A host that has not signed in within this long is dropped. */
  authTimeoutMs: number;
  /** The lab's adb server now (the lab owner may move it). */
  labAdb: () => AdbServerAddress | null;
  /** The adb server of a phone on a provider (through its SSH connection); undefined for the lab's own phones. */
  adbServerOf: (serial: string) => AdbServerAddress | undefined;
  /** The system usbmuxd the iOS fleet tracks; null when the iOS fleet is off. */
  usbmuxd: UsbmuxdAddress | null;
  /** A connection to a port of an iPhone's WebDriverAgent the way the fleet reaches it (a 17.4+ phone's tunnel); undefined: usbmuxd. */
  wdaPort?: (serial: string, port: number) => Promise<Socket> | undefined;
  /** LAN sharing now: where teammates reach the lab over HTTPS, and its certificate's fingerprint; undefined when off. */
  lan: () => { origin: string; certificateSha256: string } | undefined;
  log: (message: string) => void;
}

/** What listens for one phone: the adb bridge, or the private usbmuxd with its WebDriverAgent port. */
interface RemoteEnd {
  /** Listens on these ports (one per port the end needs), or on none when it fails, so that it can start again. */
  start(ports: number[]): Promise<void>;
  connections(): Array<{ peer: string; fingerprint?: string; since: number }>;
  /** Drops the connections signed in with a key no longer let in (the bridge's; usbmuxd has no per-user keys). */
  recheck?(): void;
  close(): void;
}

/** One phone's open remote connection. */
interface Opened {
  allocationId: string;
  organizationId: string;
  serial: string;
  platform: 'android' | 'ios';
  ports: number[];
  /** The address its listeners listen on, as bindHost named it when it opened. */
  host: string;
  /** Who opened it: their registered keys are let in. */
  userIds: Set<string>;
  /** Keys given with the POST, accepted for this checkout alone, with who gave each. */
  checkoutKeys: Array<AdbPublicKey & { userId: string }>;
  end: RemoteEnd;
  /** Opens the LAN tunnel to this checkout's listeners; dies with them. */
  tunnelSecret: string;
}

export interface RemoteConnectView {
  platform: 'android' | 'ios';
  address: string;
  command: string;
  webDriverAgentUrl?: string;
  lanCommand?: string;
  connections: Array<{ peer: string; fingerprint: string | null; since: number }>;
}

interface RemoteConnectEvents {
  /** A remote connection's streams carried bytes (at most once a second per phone): activity, for idle release. */
  activity: [allocationId: string];
}

/** How often, at most, activity is reported for one phone. */
const ACTIVITY_EVERY_MS = 1000;

/** adb treats 5555-5585 as emulator ports and renames such devices `emulator-N`. */
const EMULATOR_PORTS = { first: 5555, last: 5585 };

/**
 * A user's own tools on a held phone. Android: a bridge that speaks adbd's side of the protocol, so the user's adb
 * `connect`s to it and signs in with a registered key (or one given for this checkout). iPhone: a private usbmuxd that
 * shows only that phone and hands out a pairing of the checkout's own, plus a WebDriverAgent port. Over LAN sharing
 * both are also reached through a per-checkout tunnel inside the HTTPS port. Everything lives as long as the
 * allocation: release, session end, device_lost and engine stop close it before cleanup starts.
 */
export class RemoteConnect extends EventEmitter<RemoteConnectEvents> {
  private readonly opened = new Map<string, Opened>();
  /** Ports in use or opening, and when each released port was let go. */
  private readonly busy = new Set<number>();
  private readonly resting = new Map<number, number>();
  private readonly lastActivity = new Map<string, number>();

  constructor(
    private readonly stores: Pick<Stores, 'adbKeys'>,
    private readonly control: Pick<DeviceControl, 'holding' | 'notDriven'>,
    private readonly phones: Pick<PhoneSource, 'get'>,
    private readonly now: Clock,
    private readonly options: RemoteConnectOptions,
  ) {
    super();
    const { first, last } = options.ports;
    if (first > last || (first <= EMULATOR_PORTS.last && last >= EMULATOR_PORTS.first)) {
      throw new RangeError(`remote-connect ports ${first}-${last} must be a range outside adb's emulator ports ${EMULATOR_PORTS.first}-${EMULATOR_PORTS.last}`);
    }
  }

  // ---- adb keys: a user's own, whichever organization they act in ----

  listKeys(caller: Caller): AdbKeyRow[] {
    return this.stores.adbKeys.ofUser(caller.user.id);
  }

  addKey(caller: Caller, body: { publicKey: string; title?: string }): AdbKeyRow {
    const parsed = parseKey(body.publicKey);
    const userId = caller.user.id;
    const existing = this.stores.adbKeys.byFingerprint(parsed.fingerprint);
    if (existing) {
      throw conflict('key_in_use', existing.userId === userId ? 'You have added this adb key already.' : 'This adb key belongs to another user of the lab.');
    }
    const row: AdbKeyRow = {
      id: randomUUID(),
      userId,
      title: body.title?.trim() || parsed.comment || 'adb key',
      publicKey: parsed.blob,
      fingerprint: parsed.fingerprint,
      createdAt: this.now(),
    };
    this.stores.adbKeys.insert(row);
    return row;
  }

  deleteKey(caller: Caller, id: string): void {
    if (!this.stores.adbKeys.remove(id, caller.user.id)) throw notFound('adb key');
  }

  // ---- remote connections ----

  /**
   * Opens the phone's remote connection, or answers the open one (`created` false) with this caller let in too.
   * `readerOrigin`: where the caller reached the lab, for lanCommand's origin. A phone a WebDriver run drives is
   * watch-only, and a person's own adb or usbmuxd is no exception: refused (409 webdriver_running) until the run ends
   * or is taken over.
   */
  open(scope: Scope, target: DeviceTarget, body: { publicKey?: string }, readerOrigin?: string): Promise<{ created: boolean; view: RemoteConnectView }> {
    return this.openHeld(scope, target, body, readerOrigin, false);
  }

  /** The WebDriver run's own connection to the phone it drives: Appium's adb, or its WebDriverAgent, reaches it here. */
  openForRun(scope: Scope, target: DeviceTarget, body: { publicKey?: string }): Promise<{ created: boolean; view: RemoteConnectView }> {
    return this.openHeld(scope, target, body, undefined, true);
  }

  private async openHeld(scope: Scope, target: DeviceTarget, body: { publicKey?: string }, readerOrigin: string | undefined, forRun: boolean): Promise<{ created: boolean; view: RemoteConnectView }> {
    requireRole(scope.role, 'readwrite');
    const held = this.control.holding(scope, target);
    const row = forRun ? held : this.control.notDriven(held);
    const userId = scope.caller.user.id;
    const checkoutKey = body.publicKey === undefined ? undefined : { ...parseKey(body.publicKey), userId };
    const current = this.opened.get(row.id);
    if (current) {
      current.userIds.add(userId);
      if (checkoutKey && !current.checkoutKeys.some((k) => k.fingerprint === checkoutKey.fingerprint)) current.checkoutKeys.push(checkoutKey);
      return { created: false, view: this.view(current, readerOrigin) };
    }
    const platform = this.phones.get(row.serial!)?.platform ?? (row.platform as 'android' | 'ios');
    const opened: Opened = {
      allocationId: row.id,
      organizationId: row.organizationId,
      serial: row.serial!,
      platform,
      ports: [],
      host: this.options.bindHost(),
      userIds: new Set([userId]),
      checkoutKeys: checkoutKey ? [checkoutKey] : [],
      end: undefined as unknown as RemoteEnd,
      tunnelSecret: randomBytes(24).toString('base64url'),
    };
    opened.end = platform === 'android' ? this.adbEnd(opened, userId) : await this.usbmuxdEnd(opened);
    const ports = await this.listen(opened.end, platform === 'android' ? 1 : 2);
    // Released, or opened by a concurrent request, while the ports were being taken.
    const again = this.opened.get(row.id);
    if (again || !this.stillHeld(scope, target, row)) {
      opened.end.close();
      for (const port of ports) this.letGo(port);
      if (again) return { created: false, view: this.view(again, readerOrigin) };
      throw conflict('device_not_in_use', 'The device was released while its remote connection opened.');
    }
    opened.ports = ports;
    this.opened.set(row.id, opened);
    return { created: true, view: this.view(opened, readerOrigin) };
  }

  private adbEnd(opened: Opened, userId: string): RemoteEnd {
    if (opened.checkoutKeys.length === 0 && this.stores.adbKeys.ofUser(userId).length === 0) {
      throw conflict('no_adb_key', 'Add your adb key first (POST /api/v1/adb-keys with ~/.android/adbkey.pub), or pass publicKey for this checkout.');
    }
    // A provider's phone is reached through its provider's adb server, so that remote connect (and the lab's own
    // WebDriver sessions, which go through it) works on it exactly as on a phone on the lab's USB.
    const labAdb = this.options.adbServerOf(opened.serial) ?? this.options.labAdb();
    if (!labAdb) throw conflict('not_supported', 'The lab\'s Android fleet is off.');
    const bridge = new AdbBridge({
      serial: opened.serial,
      labAdb,
      host: opened.host,
      keys: () => this.keysOf(opened),
      authTimeoutMs: this.options.authTimeoutMs,
      onTraffic: () => this.traffic(opened.allocationId),
      log: this.options.log,
    });
    return { start: ([port]) => bridge.start(port!), connections: () => bridge.connections(), recheck: () => bridge.recheck(), close: () => bridge.close() };
  }

  private async usbmuxdEnd(opened: Opened): Promise<RemoteEnd> {
    const upstream = this.options.usbmuxd;
    if (!upstream) throw conflict('not_supported', 'The lab\'s iOS fleet is off.');
    // Loaded with the first iPhone opened: the pairing code brings X.509 and plist libraries that every start paid for.
    const [{ createPairing, pairRecordOf }, { PrivateUsbmuxd, readLabPairRecord }] = await Promise.all([
      import('../../../protocols/apple/pairing.js'),
      import('../fleet/ios/private-usbmuxd.js'),
    ]);
    const lab = await readLabPairRecord(upstream, opened.serial).catch(() => undefined);
    if (!lab) throw conflict('device_not_paired', 'The lab has no pairing with this iPhone (tap Trust on it first).');
    // A pairing of the checkout's own: what the user's tools hold, and what stops opening anything at release.
    const checkout = await createPairing(lab.systemBuid);
    const usbmuxd = new PrivateUsbmuxd({
      upstream,
      udid: opened.serial,
      host: opened.host,
      lab,
      checkout,
      checkoutRecord: pairRecordOf(checkout),
      onTraffic: () => this.traffic(opened.allocationId),
      log: this.options.log,
      // A usbmuxd client with a request half sent is a stranger's silent socket, as an adb host not signed in is.
      limits: { idleMs: this.options.authTimeoutMs },
      // Asked at each connection: the phone's WDA may move into or out of a tunnel while the checkout lasts.
      wdaRoute: () => this.options.wdaPort?.(opened.serial, 8100),
    });
    return { start: ([mux, wda]) => usbmuxd.start(mux!, wda!), connections: () => usbmuxd.connections(), close: () => usbmuxd.close() };
  }

  get(scope: Scope, target: DeviceTarget, readerOrigin?: string): RemoteConnectView {
    const row = this.control.holding(scope, target);
    const current = this.opened.get(row.id);
    if (!current) throw notFound('remote connection');
    return this.view(current, readerOrigin);
  }

  close(scope: Scope, target: DeviceTarget): void {
    requireRole(scope.role, 'readwrite');
    const row = this.control.holding(scope, target);
    if (!this.opened.has(row.id)) throw notFound('remote connection');
    this.end(row.id);
  }

  /** The allocator's release hook: connections drop before cleanup starts, and wireless debugging goes off. */
  onReleased(row: DeviceAllocationRow): void {
    const current = this.opened.get(row.id);
    if (!current) return;
    this.end(row.id);
    const labAdb = this.options.adbServerOf(current.serial) ?? this.options.labAdb();
    // What a user may have switched on from a shell (Android 11+'s wireless debugging) would outlive the checkout.
    if (labAdb && current.platform === 'android') void this.wirelessDebuggingOff(labAdb, current.serial);
  }

  /**
   * A member removed from an organization: the connections they opened there on phones others hold close, or, where
   * others opened the same one too, lose their keys (and any host signed in with one). Their own allocations' connections
   * close with the release.
   */
  forget(organizationId: string, userId: string): void {
    for (const opened of [...this.opened.values()]) {
      if (opened.organizationId !== organizationId || !opened.userIds.delete(userId)) continue;
      opened.checkoutKeys = opened.checkoutKeys.filter((k) => k.userId !== userId);
      if (opened.userIds.size === 0) this.end(opened.allocationId);
      else opened.end.recheck?.();
    }
  }

  /**
   * Where a LAN tunnel with this secret leads: the checkout's listener (`which` 0) or its WebDriverAgent port (1);
   * undefined for a secret of no open checkout. The secret is the credential: it is shown only to the holder.
   */
  tunnelTarget(secret: string, which: number): { host: string; port: number } | undefined {
    const given = Buffer.from(secret);
    for (const opened of this.opened.values()) {
      const known = Buffer.from(opened.tunnelSecret);
      if (known.length === given.length && timingSafeEqual(known, given)) {
        const port = opened.ports[which];
        return port === undefined ? undefined : { host: opened.host, port };
      }
    }
    return undefined;
  }

  /**
   * The lab owner switched remote-connect on the LAN on or off: every connection listening on the other address closes
   * at once (its users' adb shows offline), so that nothing stays on the LAN once it is off. Its holder opens it again
   * (POST), on the address now in force.
   */
  rehost(): void {
    const host = this.options.bindHost();
    const moved = [...this.opened.values()].filter((o) => o.host !== host);
    for (const opened of moved) this.end(opened.allocationId);
    if (moved.length > 0) this.options.log(`remote connect: closed ${moved.length} connection(s) that listened on the old address (now ${host})`);
  }

  /** Engine stop: everything closes. */
  stop(): void {
    for (const id of [...this.opened.keys()]) this.end(id);
  }

  private end(allocationId: string): void {
    const current = this.opened.get(allocationId);
    if (!current) return;
    this.opened.delete(allocationId);
    this.lastActivity.delete(allocationId);
    current.end.close();
    for (const port of current.ports) this.letGo(port);
  }

  private async wirelessDebuggingOff(labAdb: AdbServerAddress, serial: string): Promise<void> {
    try {
      const socket = await openDeviceService(labAdb, serial, 'shell:settings put global adb_wifi_enabled 0');
      socket.resume();
      socket.on('error', () => undefined);
    } catch (error) {
      this.options.log(`${serial}: turning wireless debugging off failed: ${(error as Error).message}`);
    }
  }

  private stillHeld(scope: Scope, target: DeviceTarget, row: DeviceAllocationRow): boolean {
    try {
      return this.control.holding(scope, target).id === row.id;
    } catch {
      return false;
    }
  }

  private keysOf(opened: Opened): AdbPublicKey[] {
    const registered = [...opened.userIds].flatMap((id) => this.stores.adbKeys.ofUser(id)).map((k) => parseAdbPublicKey(k.publicKey));
    return [...registered, ...opened.checkoutKeys];
  }

  private traffic(allocationId: string): void {
    const now = Date.now();
    if (now - (this.lastActivity.get(allocationId) ?? 0) < ACTIVITY_EVERY_MS) return;
    this.lastActivity.set(allocationId, now);
    this.emit('activity', allocationId);
  }

  /** Takes the first `count` pool ports that are neither busy nor resting and that the OS lets `end` bind. */
  private async listen(end: RemoteEnd, count: number): Promise<number[]> {
    const { first, last } = this.options.ports;
    const now = this.now();
    const free: number[] = [];
    for (let port = first; port <= last && free.length < count; port++) {
      const since = this.resting.get(port);
      if (this.busy.has(port) || (since !== undefined && now - since < this.options.restMs)) continue;
      free.push(port);
    }
    if (free.length < count) {
      throw conflict('no_free_port', `Every remote-connect port (${first}-${last}) is in use or resting after a release; try again in a minute.`);
    }
    for (const port of free) this.busy.add(port);
    try {
      await end.start(free);
    } catch (error) {
      for (const port of free) this.busy.delete(port);
      // Taken by another program: rest that port (all of them if the OS does not say which), so the next try moves on.
      if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
        const taken = (error as { port?: number }).port;
        for (const port of free) if (taken === undefined || !free.includes(taken) || port === taken) this.resting.set(port, now);
        return this.listen(end, count);
      }
      end.close();
      throw conflict('device_error', `The remote connection could not open: ${(error as Error).message}`);
    }
    for (const port of free) this.resting.delete(port);
    return free;
  }

  private letGo(port: number): void {
    if (!this.busy.delete(port)) return;
    this.resting.set(port, this.now());
  }

  private view(opened: Opened, readerOrigin?: string): RemoteConnectView {
    const host = opened.host;
    const address = `${host}:${opened.ports[0]}`;
    const connections = opened.end.connections().map((c) => ({ peer: c.peer, fingerprint: c.fingerprint ?? null, since: c.since }));
    const lanCommand = this.lanCommand(opened, readerOrigin);
    if (opened.platform === 'android') return { platform: 'android', address, command: `adb connect ${address}`, ...lanCommand, connections };
    return {
      platform: 'ios',
      address,
      command: `export USBMUXD_SOCKET_ADDRESS=${address}`,
      webDriverAgentUrl: `http://${host}:${opened.ports[1]}`,
      ...lanCommand,
      connections,
    };
  }

  /**
   * Over LAN sharing: one command a teammate runs with Node alone. It fetches the tunnel client from the lab, checks
   * the lab's certificate fingerprint before running it, and listens on the same port number on their own loopback,
   * so that the address in `command` (and an iPhone's webDriverAgentUrl) works there unchanged. It names the origin
   * the reader reached the lab at when that was over the LAN, else LAN sharing's first.
   */
  private lanCommand(opened: Opened, readerOrigin?: string): { lanCommand?: string } {
    const lan = this.options.lan();
    if (!lan) return {};
    const { certificateSha256: fp } = lan;
    const origin = readerOrigin ? reachableOrigin(readerOrigin, [lan.origin]) : lan.origin;
    const fetchAndRun =
      `require('https').get('${origin}/api/v1/remote-connect/client.cjs',{rejectUnauthorized:false},r=>{` +
      `if(r.socket.getPeerCertificate().fingerprint256!=='${fp}'){console.error('not the lab: certificate mismatch');process.exit(1)}` +
      `let s='';r.on('data',d=>s+=d).on('end',()=>eval(s))})`;
    return { lanCommand: `node -e "${fetchAndRun}" ${origin} ${opened.tunnelSecret} ${fp} ${opened.ports.join(',')}` };
  }

}

function parseKey(text: string): AdbPublicKey {
  try {
    return parseAdbPublicKey(text);
  } catch (error) {
    if (error instanceof NotAnAdbKey) throw invalid('invalid_public_key', `That is not an adb public key (~/.android/adbkey.pub): ${error.message}`);
    throw error;
  }
}
