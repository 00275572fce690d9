import { EventEmitter } from 'node:events';
import type { EngineConfig } from '../config.js';
import { AndroidFleet } from './android/android-fleet.js';
import { IosFleet } from './ios/ios-fleet.js';
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
  /** Moves the Android fleet to another adb server; absent when the Android fleet is off. */
  retarget?(address: { host: string; port: number }): Promise<void>;
}

type Part = PhoneSource;

/** UDIDs: 40 hex digits before the iPhone XS, 8-dash-16 since. */
const IOS_UDID = /^([0-9a-f]{40}|[0-9A-F]{8}-[0-9A-F]{16})$/i;

/**
 * The fleet is the union of its sources: this workstation's Android and iOS fleets, and the providers attached
 * while it runs. Each phone is driven by the source that reported it.
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

  constructor(private readonly local: Array<AndroidFleet | IosFleet>) {
    super();
    for (const part of local) this.attach(part);
    const android = local.find((p): p is AndroidFleet => p instanceof AndroidFleet);
    if (android) this.retarget = (address) => android.retarget(address);
  }

  async start() {
    await Promise.all(this.local.map((p) => p.start()));
  }

  async stop() {
    await Promise.all(this.local.map((p) => p.stop()));
  }

  attach(part: Part): void {
    const phone = (p: Phone) => {
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

  list(): Phone[] {
    return this.parts.flatMap((p) => p.list().filter((phone) => this.owner.get(phone.serial) === p));
  }

  get(serial: string): Phone | undefined {
    return this.owner.get(serial)?.get(serial);
  }

  driver(serial: string): PhoneDriver {
    // A phone away for a moment (unplugged within grace) is driven by the fleet its serial belongs to; the command
    // then fails as an unplugged phone's would.
    const part = this.owner.get(serial) ?? this.local.find((p) => p instanceof IosFleet && IOS_UDID.test(serial)) ?? this.local[0] ?? this.parts[0];
    if (!part) throw new Error(`No phone ${serial}: the Android and iOS fleets are both off.`);
    return part.driver(serial);
  }
}

export function createFleet(config: EngineConfig, log: (message: string) => void): Fleet {
  const parts: Array<AndroidFleet | IosFleet> = [];
  if (config.adb) parts.push(new AndroidFleet(config.adb, log));
  if (config.usbmuxd) parts.push(new IosFleet(config.usbmuxd, log, { bundleId: config.wdaBundleId, xcrun: config.xcrun }));
  return new CombinedFleet(parts);
}
