import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import type { EngineConfig } from '../config.js';
import type { AndroidFleet } from './android/android-fleet.js';
import type { AdbServerAddress } from '../../../protocols/adb/host.js';
import type { IosFleet } from './ios/ios-fleet.js';
import type { Phone, PhoneDriver, PhoneSource } from './types.js';

export interface Fleet extends PhoneSource {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Adds a source of phones (a provider) to the fleet while it runs. */
  attach(source: PhoneSource): void;
  /** Removes a source added with attach; its phones are gone. */
  detach(source: PhoneSource): void;
  /** Serials two sources report at once, with the hosts that report them (null: this workstation). */
  duplicates(): Array<{ serial: string; hosts: Array<string | null>; inFleet: string | null }>;
  /** The adb server an Android phone is on when that is not the lab's own (a provider's); undefined for the lab's. */
  adbServerOf(serial: string): AdbServerAddress | undefined;
  /** Moves the Android fleet to another adb server; absent when the Android fleet is off. */
  retarget?(address: { host: string; port: number }): Promise<void>;
  /** A connection to a port on an iPhone through the tunnel its WebDriverAgent runs in (iOS 17.4+); undefined when none. */
  wdaPort(serial: string, port: number): Promise<Socket> | undefined;
}

type Part = PhoneSource;

/** UDIDs: 40 hex digits before the iPhone XS, 8-dash-16 since. */
const IOS_UDID = /^([0-9a-f]{40}|[0-9A-F]{8}-[0-9A-F]{16})$/i;

/**
 * The fleet is the union of its sources: this workstation's Android and iOS fleets, and the providers attached
 * while it runs. Each phone is driven by the source that reported it.
 *
 * The workstation's own fleets' code (adbkit alone is a quarter of the engine's bundle) is loaded when the fleet
 * starts, which is after the API answers: a lab's start-up does not wait for it. Until then they list no phones.
 *
 * A serial belongs to the first source that reports it, for as long as that source lists it (offline included).
 * Another source reporting the same serial meanwhile is kept out of the fleet: an API call names a phone by its
 * serial alone, so two phones under one serial could not be told apart. The duplicate joins once the first has
 * gone; an allocation still held on the serial then ends as device_lost (the allocator sees the host change).
 */
class CombinedFleet extends EventEmitter implements Fleet {
  retarget?: (address: { host: string; port: number }) => Promise<void>;
  private readonly parts: Part[] = [];
  private readonly subscriptions = new Map<Part, { phone: (phone: Phone) => void; gone: (serial: string) => void }>();
  /** Which source a serial belongs to. */
  private readonly owner = new Map<string, Part>();
  private android: AndroidFleet | undefined;
  private ios: IosFleet | undefined;
  private loaded: Promise<Part[]> | undefined;

  constructor(
    private readonly load: { android?: () => Promise<AndroidFleet>; ios?: () => Promise<IosFleet> },
    /** Serials that are not phones: remote-connect bridges, should the lab's own adb server ever connect to one. */
    private readonly hidden: (serial: string) => boolean = () => false,
  ) {
    super();
    if (load.android) {
      this.retarget = async (address) => {
        await this.loadLocal();
        await this.android!.retarget(address);
      };
    }
  }

  /** This workstation's own fleets, loaded once and attached as the first sources. */
  private loadLocal(): Promise<Part[]> {
    this.loaded ??= Promise.all([this.load.android?.(), this.load.ios?.()]).then(([android, ios]) => {
      this.android = android;
      this.ios = ios;
      const local = [android, ios].filter((p): p is AndroidFleet | IosFleet => p !== undefined);
      for (const part of local) this.attach(part);
      return local;
    });
    return this.loaded;
  }

  async start() {
    await Promise.all((await this.loadLocal()).map((p) => (p as AndroidFleet | IosFleet).start()));
  }

  async stop() {
    await Promise.all([this.android, this.ios].map((p) => p?.stop()));
  }

  attach(part: Part): void {
    const phone = (p: Phone) => {
      if (this.hidden(p.serial)) return;
      const owner = this.owner.get(p.serial);
      if (owner && owner !== part && owner.get(p.serial)) return;
      this.owner.set(p.serial, part);
      this.emit('phone', p);
    };
    const gone = (serial: string) => {
      if (this.owner.get(serial) !== part) return;
      this.owner.delete(serial);
      this.emit('gone', serial);
      // The same serial on another source now joins the fleet.
      for (const other of this.parts) {
        const there = other === part ? undefined : other.get(serial);
        if (!there) continue;
        this.owner.set(serial, other);
        this.emit('phone', there);
        return;
      }
    };
    this.parts.push(part);
    this.subscriptions.set(part, { phone, gone });
    part.on('phone', phone);
    part.on('gone', gone);
    for (const p of part.list()) phone(p);
  }

  detach(part: Part): void {
    const listening = this.subscriptions.get(part);
    if (!listening) return;
    part.off('phone', listening.phone);
    part.off('gone', listening.gone);
    this.subscriptions.delete(part);
    for (const p of part.list()) listening.gone(p.serial);
    this.parts.splice(this.parts.indexOf(part), 1);
  }

  duplicates() {
    const hostsOf = new Map<string, Array<string | null>>();
    for (const part of this.parts) {
      for (const p of part.list()) hostsOf.set(p.serial, [...(hostsOf.get(p.serial) ?? []), p.host ?? null]);
    }
    return [...hostsOf]
      .filter(([, hosts]) => hosts.length > 1)
      .map(([serial, hosts]) => ({ serial, hosts, inFleet: this.owner.get(serial)?.get(serial)?.host ?? null }));
  }

  wdaPort(serial: string, port: number): Promise<Socket> | undefined {
    return this.ios && this.owner.get(serial) === this.ios ? this.ios.tunnelPort(serial, port) : undefined;
  }

  adbServerOf(serial: string): AdbServerAddress | undefined {
    const part = this.owner.get(serial) as (Part & { adbServer?: () => AdbServerAddress }) | undefined;
    return part?.adbServer?.();
  }

  list(): Phone[] {
    return this.parts.flatMap((p) => p.list().filter((phone) => this.owner.get(phone.serial) === p));
  }

  get(serial: string): Phone | undefined {
    return this.owner.get(serial)?.get(serial);
  }

  driver(serial: string): PhoneDriver {
    // A phone away for a moment (unplugged within grace) is driven by the fleet its serial belongs to; the command
    // then fails as an unplugged phone's would.
    const part = this.owner.get(serial) ?? (this.ios && IOS_UDID.test(serial) ? this.ios : undefined) ?? this.android ?? this.ios ?? this.parts[0];
    if (!part) {
      const off = !this.load.android && !this.load.ios;
      throw new Error(off ? `No phone ${serial}: the Android and iOS fleets are both off.` : `No phone ${serial}: the fleet is still starting.`);
    }
    return part.driver(serial);
  }
}

/**
 * How the workstation's iOS fleet starts WDA: the runner, a Mac's xcrun, go-ios (its processes' files in the data dir),
 * the DDI. Providers' iPhones use its go-ios and DDI too (one pid dir: a crashed engine's leftovers of either are ended).
 */
export function iosLaunch(config: EngineConfig) {
  const ios = join(config.dataDir, 'ios');
  return {
    bundleId: config.wdaBundleId,
    xcrun: config.xcrun,
    ...(config.goIos ? { goIos: { binary: config.goIos, pidDir: join(ios, 'pids'), workDir: join(ios, 'go-ios') } } : {}),
    ddiPath: config.ddiPath,
  };
}

export function createFleet(config: EngineConfig, log: (message: string) => void): Fleet {
  const { adb, usbmuxd } = config;
  // A bridge's serial is host:port with a remote-connect port: the lab's own adb server reaches it only if someone on
  // the lab box `adb connect`s to it through that server, and it must not come back as a second copy of the phone.
  const { first, last } = config.remotePorts;
  const bridge = (serial: string) => {
    const port = Number(/^[^\s]+:(\d+)$/.exec(serial)?.[1]);
    return port >= first && port <= last;
  };
  return new CombinedFleet({
    ...(adb ? { android: async () => new (await import('./android/android-fleet.js')).AndroidFleet(adb, log) } : {}),
    ...(usbmuxd ? { ios: async () => new (await import('./ios/ios-fleet.js')).IosFleet(usbmuxd, log, iosLaunch(config)) } : {}),
  }, bridge);
}
