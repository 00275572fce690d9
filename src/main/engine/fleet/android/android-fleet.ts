import { EventEmitter } from 'node:events';
import { isLoopback } from '../../config.js';
import { withTimeout } from '../../domain/time.js';
import type { Phone } from '../types.js';
import { Adb, NO_ADB, type Client } from './adb.js';
import { AndroidDriver } from './driver.js';

type Tracker = Awaited<ReturnType<Client['trackDevices']>>;
type AdbDevice = { id: string; type: string };

const RETRY_MS = 1000;
const BATTERY_REFRESH_MS = 60_000;

export interface AndroidFleetTiming {
  /** How long a phone adb lists as a device may take to say who it is (getprop, battery) before it is listed offline. */
  describeMs: number;
  /** How soon such a phone is asked again. */
  readAgainMs: number;
}

/**
 * Where makers' builds keep the name a phone is sold under: Xiaomi, Redmi and POCO (ro.product.marketname, or its odm
 * partition's), OPPO, OnePlus and realme (ro.vendor.oplus.market.name; ro.oppo.market.name before ColorOS 12), vivo
 * and Huawei or Honor. Samsung, Google and Motorola set none: their ro.product.model is read (and SM- codes named).
 */
const MARKETING_NAME_PROPERTIES = ['ro.product.marketname', 'ro.product.odm.marketname', 'ro.vendor.oplus.market.name', 'ro.oppo.market.name', 'ro.vivo.market.name', 'ro.config.marketing_name'];
/** As long as a name the Fleet shows: what a phone's build says is the phone's, not trusted to be short. */
const MAX_NAME_LENGTH = 100;

function marketingName(props: Record<string, string>): string | undefined {
  for (const key of MARKETING_NAME_PROPERTIES) {
    const name = props[key]?.trim();
    if (name) return name.slice(0, MAX_NAME_LENGTH);
  }
  return undefined;
}

/** A phone's getprop and battery take well under a second; a USB 2 phone that is still booting a few seconds. */
const ANDROID_FLEET_TIMING: AndroidFleetTiming = { describeMs: 15_000, readAgainMs: 5_000 };

export interface AndroidFleetEvents {
  /** A phone appeared or changed (state, battery). */
  phone: [Phone];
  /** A phone was pulled out (or its adb transport went away). */
  gone: [string];
}

/** What a phone that has not allowed USB debugging needs, as the fleet shows it. */
const ANDROID_UNAUTHORIZED_STEPS = 'Unlock the phone and tap Allow on "Allow USB debugging?" (tick "Always allow from this computer"). If no prompt shows, unplug it, revoke USB debugging authorizations in Developer options, and plug it in again.';

/**
 * The Android half of the fleet: tracks the adb server's device list as it changes (host:track-devices pushes
 * every change, so nothing polls), and reads each phone's model, version and battery when it comes online.
 * adbkit starts the adb server itself when none answers and `adb` is on PATH.
 */
export class AndroidFleet extends EventEmitter<AndroidFleetEvents> {
  client: Client;
  private readonly phones = new Map<string, Phone>();
  private tracker: Tracker | undefined;
  private stopped = false;
  private retry: NodeJS.Timeout | undefined;
  private batteryTimer: NodeJS.Timeout | undefined;
  private lastProblem: string | undefined;
  /**
   * The adb server is this machine's own, on loopback, reached straight: its writes reach the engine as it made them
   * (what lets a live screen's H.264 picture go out without a pause, fleet/android/h264-feed.ts). A provider's SSH
   * channel and a network can cut them anywhere.
   */
  private writesIntact: boolean;
  /** Bumped when the fleet moves to another adb server: what the old one still reports is dropped. */
  private generation = 0;
  /** Phones adb lists as devices that did not say who they are in time, each with its next try. */
  private readonly readAgain = new Map<string, NodeJS.Timeout>();
  /** What adb last said of each phone (device, offline, unauthorized). */
  private readonly reported = new Map<string, string>();

  /**
   * `client` replaces the TCP connection to `address` (a provider's adb server reached over SSH), and `bulk` carries
   * installs there.
   */
  constructor(
    public address: { host: string; port: number },
    private readonly log: (message: string) => void,
    client?: Client,
    private readonly bulk?: Client,
    private readonly timing: AndroidFleetTiming = ANDROID_FLEET_TIMING,
  ) {
    super();
    this.client = client ?? Adb.createClient({ host: address.host, port: address.port });
    this.writesIntact = client === undefined && isLoopback(address.host);
  }

  /** Resolves once the current device list has been read, or after a first failure (it keeps retrying). */
  async start(): Promise<void> {
    await this.track();
    this.batteryTimer = setInterval(() => void this.refreshBatteries(), BATTERY_REFRESH_MS);
    this.batteryTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    for (const timer of this.readAgain.values()) clearTimeout(timer);
    this.readAgain.clear();
    clearInterval(this.batteryTimer);
    this.tracker?.end();
    // adbkit starts an adb server when none answers. Once the lab has stopped, a call it still had in flight (a
    // release's cleanup) must not start one that outlives it: the server it tracked was ended on purpose.
    (this.client as unknown as { options: { bin: string } }).options.bin = NO_ADB;
  }

  /**
   * Tracks another adb server from now on (the lab owner saved a new address). The phones seen through the old one
   * are gone; the new one's are reported as they are read, so an allocated phone that shows up again under the same
   * serial within the grace period keeps its allocation.
   */
  async retarget(address: { host: string; port: number }): Promise<void> {
    this.generation++;
    clearTimeout(this.retry);
    const old = this.tracker;
    this.tracker = undefined;
    // Its end is ours, not the server's: no retry against the old address.
    old?.removeAllListeners('end');
    old?.end();
    this.address = address;
    this.client = Adb.createClient({ host: address.host, port: address.port });
    this.writesIntact = isLoopback(address.host);
    this.lastProblem = undefined;
    for (const serial of [...this.phones.keys()]) this.onRemove(serial);
    await this.track();
  }

  list(): Phone[] {
    return [...this.phones.values()];
  }

  get(serial: string): Phone | undefined {
    return this.phones.get(serial);
  }

  driver(serial: string): AndroidDriver {
    return new AndroidDriver(this.client, serial, this.bulk, this.writesIntact);
  }

  private async track(): Promise<void> {
    const generation = this.generation;
    const current = () => generation === this.generation;
    try {
      const devices = await this.client.listDevices();
      await Promise.all(devices.map((d: AdbDevice) => this.onDevice(d, generation)));
      if (!current()) return;
      for (const serial of this.phones.keys()) if (!devices.some((d: AdbDevice) => d.id === serial)) this.onRemove(serial);
      const tracker = await this.client.trackDevices();
      if (!current()) return void tracker.end();
      this.tracker = tracker;
      this.lastProblem = undefined;
      tracker.on('add', (d: AdbDevice) => void this.onDevice(d, generation));
      tracker.on('change', (d: AdbDevice) => void this.onDevice(d, generation));
      tracker.on('remove', (d: AdbDevice) => current() && this.onRemove(d.id));
      tracker.on('error', () => undefined);
      tracker.on('end', () => this.scheduleRetry('the adb server closed the device tracker'));
    } catch (error) {
      if (current()) this.scheduleRetry((error as Error).message);
    }
  }

  private scheduleRetry(why: string): void {
    if (this.stopped) return;
    // Said once per distinct cause, not every second while adb stays away.
    if (why !== this.lastProblem) this.log(`adb at ${this.address.host}:${this.address.port}: ${why}; retrying every ${RETRY_MS / 1000} s`);
    this.lastProblem = why;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.track(), RETRY_MS);
  }

  private async onDevice(device: AdbDevice, generation: number): Promise<void> {
    const known = this.phones.get(device.id);
    const state = device.type === 'device' || device.type === 'emulator' ? 'device' : device.type === 'unauthorized' ? 'unauthorized' : 'offline';
    const steps = state === 'unauthorized' ? ANDROID_UNAUTHORIZED_STEPS : undefined;
    let phone: Phone = known
      ? { ...known, state, steps }
      : { serial: device.id, platform: 'android', type: 'real', name: '', osVersion: '', state, battery: null, steps };
    // A read already failing is being tried again: its silence was said.
    const retrying = this.readAgain.has(device.id);
    clearTimeout(this.readAgain.get(device.id));
    this.readAgain.delete(device.id);
    this.reported.set(device.id, device.type);
    if (state === 'device') {
      try {
        // Bounded: a phone whose link went bad stays a device to adb while whatever is asked of it waits, and the
        // fleet's first look (which the allocator waits for) would wait with it.
        phone = { ...phone, ...(await withTimeout(this.describe(device.id), this.timing.describeMs, 'Reading its properties')) };
      } catch (error) {
        // Listed as offline, and read again until it answers (adb reports no change for a phone that stays a device);
        // said once, not at every try.
        if (!retrying) this.log(`${device.id}: could not read its properties: ${(error as Error).message}; trying again every ${this.timing.readAgainMs / 1000} s`);
        phone = { ...phone, state: 'offline' };
        if (!this.stopped && generation === this.generation) {
          const timer = setTimeout(() => {
            // Only while adb still says what it said then: a later report was handled as it came. The entry stays
            // for the try, which removes it.
            if (this.phones.has(device.id) && this.reported.get(device.id) === device.type) void this.onDevice(device, generation);
            else this.readAgain.delete(device.id);
          }, this.timing.readAgainMs);
          timer.unref();
          this.readAgain.set(device.id, timer);
        }
      }
    }
    if (this.stopped || generation !== this.generation) return;
    this.phones.set(device.id, phone);
    this.emit('phone', phone);
  }

  private onRemove(serial: string): void {
    clearTimeout(this.readAgain.get(serial));
    this.readAgain.delete(serial);
    this.reported.delete(serial);
    if (!this.phones.delete(serial)) return;
    this.emit('gone', serial);
  }

  private async describe(serial: string): Promise<Pick<Phone, 'name' | 'osVersion' | 'battery' | 'model' | 'steps'>> {
    const driver = this.driver(serial);
    const props = await this.client.getDevice(serial).getProperties();
    return {
      // The name the maker sells it under where its build says so ("Redmi Note 12" for 23021RAAEG), as people and the
      // clouds' device catalogs name it; else the model, as Android's own settings show it.
      name: marketingName(props) || props['ro.product.model'] || props['ro.product.name'] || serial,
      model: props['ro.product.model'] || undefined,
      steps: undefined,
      osVersion: props['ro.build.version.release'] || '',
      battery: await this.battery(driver),
    };
  }

  private async battery(driver: AndroidDriver): Promise<number | null> {
    const m = /level:\s*(\d+)/.exec(await driver.shell('dumpsys battery'));
    return m ? Number(m[1]) : null;
  }

  private async refreshBatteries(): Promise<void> {
    for (const phone of this.phones.values()) {
      if (phone.state !== 'device') continue;
      try {
        // Bounded as the first read is: one phone that stopped answering would hold up every later phone's refresh.
        const battery = await withTimeout(this.battery(this.driver(phone.serial)), this.timing.describeMs, 'Reading its battery');
        if (battery !== phone.battery && this.phones.has(phone.serial)) {
          const updated = { ...this.phones.get(phone.serial)!, battery };
          this.phones.set(phone.serial, updated);
          this.emit('phone', updated);
        }
      } catch {
        // the tracker will report the phone's new state
      }
    }
  }
}
