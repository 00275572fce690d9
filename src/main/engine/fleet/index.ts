import { EventEmitter } from 'node:events';
import type { EngineConfig } from '../config.js';
import type { AndroidFleet } from './android/android-fleet.js';
import type { IosFleet } from './ios/ios-fleet.js';
import type { Phone, PhoneDriver, PhoneSource } from './types.js';

export interface Fleet extends PhoneSource {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Moves the Android fleet to another adb server; absent when the Android fleet is off. */
  retarget?(address: { host: string; port: number }): Promise<void>;
}

type Part = AndroidFleet | IosFleet;

/** UDIDs: 40 hex digits before the iPhone XS, 8-dash-16 since. */
const IOS_UDID = /^([0-9a-f]{40}|[0-9A-F]{8}-[0-9A-F]{16})$/i;

/**
 * Android's and iOS's fleets as one: their phones in one list, each phone driven by the fleet that reported it.
 * Each fleet's code (adbkit alone is a quarter of the engine's bundle) is loaded when the fleet starts, which is after
 * the API answers: a lab's start-up does not wait for it. Until then the fleet lists no phones.
 */
class CombinedFleet extends EventEmitter implements Fleet {
  retarget?: (address: { host: string; port: number }) => Promise<void>;
  private parts: Part[] = [];
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
        await this.loadParts();
        await this.android!.retarget(address);
      };
    }
  }

  private loadParts(): Promise<Part[]> {
    this.loaded ??= Promise.all([this.load.android?.(), this.load.ios?.()]).then(([android, ios]) => {
      this.android = android;
      this.ios = ios;
      const parts = [android, ios].filter((p): p is Part => p !== undefined);
      for (const part of parts) {
        part.on('phone', (phone: Phone) => !this.hidden(phone.serial) && this.emit('phone', phone));
        part.on('gone', (serial: string) => !this.hidden(serial) && this.emit('gone', serial));
      }
      this.parts = parts;
      return parts;
    });
    return this.loaded;
  }

  async start() {
    await Promise.all((await this.loadParts()).map((p) => p.start()));
  }

  async stop() {
    await Promise.all(this.parts.map((p) => p.stop()));
  }

  list(): Phone[] {
    return this.parts.flatMap((p) => p.list()).filter((phone) => !this.hidden(phone.serial));
  }

  get(serial: string): Phone | undefined {
    if (this.hidden(serial)) return undefined;
    for (const part of this.parts) {
      const phone = part.get(serial);
      if (phone) return phone;
    }
    return undefined;
  }

  driver(serial: string): PhoneDriver {
    // A phone away for a moment (unplugged within grace) is driven by the fleet its serial belongs to; the command
    // then fails as an unplugged phone's would.
    const part = this.parts.find((p) => p.get(serial)) ?? (this.ios && IOS_UDID.test(serial) ? this.ios : this.parts[0]);
    if (!part) {
      const off = !this.load.android && !this.load.ios;
      throw new Error(off ? `No phone ${serial}: the Android and iOS fleets are both off.` : `No phone ${serial}: the fleet is still starting.`);
    }
    return part.driver(serial);
  }
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
    ...(usbmuxd ? { ios: async () => new (await import('./ios/ios-fleet.js')).IosFleet(usbmuxd, log, { bundleId: config.wdaBundleId, xcrun: config.xcrun }) } : {}),
  }, bridge);
}
