import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import type { Phone } from '../types.js';
import { IosDriver } from './driver.js';
import { formatUsbmuxdAddress, listen, openUsbmux, readLockdownValues, type MuxEvent, type UsbmuxdAddress } from './usbmux.js';
import { WdaClient } from './wda-client.js';

const RETRY_MS = 2000;
const BATTERY_REFRESH_MS = 60_000;
/** A phone whose WDA is not answering is asked again this often: someone may be starting it from Xcode. */
const WDA_RECHECK_MS = 5000;
const WDA_STATUS_TIMEOUT_MS = 3000;

/** What an iPhone that has not trusted this computer needs; the fleet shows it, and the log says it. */
const UNTRUSTED_STEPS = 'Unlock the iPhone and tap "Trust" on "Trust This Computer?" (enter its passcode), then unplug it and plug it in again.';

/** What an iPhone without a running WebDriverAgent needs, with the xcodebuild line for this phone. */
const wdaSteps = (udid: string) =>
  'WebDriverAgent is not answering on port 8100, so it cannot be allocated. Install and start it once from a Mac: ' +
  'clone appium/WebDriverAgent, set the WebDriverAgentRunner team in Xcode, then run ' +
  `xcodebuild -project WebDriverAgent.xcodeproj -scheme WebDriverAgentRunner -destination id=${udid} test ` +
  '(README: iPhones). It is picked up within 5 s of answering.';

export interface IosFleetEvents {
  phone: [Phone];
  gone: [string];
}

/**
 * The iOS half of the fleet: usbmuxd's Listen stream says when an iPhone is plugged in or pulled out (no polling),
 * lockdownd (in a TLS session from the pair record usbmuxd keeps) says what it is, and WebDriverAgent's /status,
 * reached through a usbmuxd tunnel to port 8100, says whether it can be driven. A phone that has not trusted this
 * computer is `unauthorized`; one without a running WDA is `wda_unavailable`; neither can be allocated.
 */
export class IosFleet extends EventEmitter<IosFleetEvents> {
  private readonly phones = new Map<string, Phone>();
  private readonly udids = new Map<number, string>();
  private readonly clients = new Map<string, WdaClient>();
  private subscription: { close(): void; closed: Promise<void> } | undefined;
  private stopped = false;
  private retry: NodeJS.Timeout | undefined;
  private timers: NodeJS.Timeout[] = [];
  private lastProblem: string | undefined;

  constructor(
    readonly address: UsbmuxdAddress,
    private readonly log: (message: string) => void,
  ) {
    super();
  }

  /** Resolves once the attached phones have been read, or after a first failure (it keeps retrying). */
  async start(): Promise<void> {
    await this.subscribe();
    this.timers.push(setInterval(() => void this.refresh('battery'), BATTERY_REFRESH_MS), setInterval(() => void this.refresh('wda'), WDA_RECHECK_MS));
    for (const t of this.timers) t.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    for (const t of this.timers) clearInterval(t);
    this.subscription?.close();
    await Promise.all([...this.clients.values()].map((c) => c.close()));
    this.clients.clear();
  }

  list(): Phone[] {
    return [...this.phones.values()];
  }

  get(serial: string): Phone | undefined {
    return this.phones.get(serial);
  }

  driver(serial: string): IosDriver {
    return new IosDriver(this.address, serial, this.wda(serial));
  }

  private wda(udid: string): WdaClient {
    let client = this.clients.get(udid);
    if (!client) {
      client = new WdaClient(this.address, udid);
      this.clients.set(udid, client);
    }
    return client;
  }

  private async subscribe(): Promise<void> {
    // No socket, no usbmuxd (Linux without the usbmuxd package, or before udev started it for a first iPhone):
    // appium-ios-device, most of a second to load, is not loaded until there is one.
    if ('path' in this.address && !existsSync(this.address.path)) return this.scheduleRetry(`no usbmuxd socket at ${this.address.path} (Linux: apt-get install usbmuxd)`);
    try {
      const pending: Array<Promise<void>> = [];
      this.subscription = await listen(this.address, (event) => pending.push(this.onEvent(event)));
      this.lastProblem = undefined;
      // Listen answers with an Attached message per phone already plugged in: the first look is those.
      await new Promise((r) => setTimeout(r, 50));
      await Promise.all(pending);
      void this.subscription.closed.then(() => {
        for (const udid of [...this.phones.keys()]) this.onGone(udid);
        this.scheduleRetry('usbmuxd closed the Listen connection');
      });
    } catch (error) {
      this.scheduleRetry((error as Error).message);
    }
  }

  private scheduleRetry(why: string): void {
    if (this.stopped) return;
    if (why !== this.lastProblem) this.log(`usbmuxd at ${formatUsbmuxdAddress(this.address)}: ${why}; retrying every ${RETRY_MS / 1000} s`);
    this.lastProblem = why;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.subscribe(), RETRY_MS);
  }

  private async onEvent(event: MuxEvent): Promise<void> {
    if (event.type === 'detached') {
      const udid = this.udids.get(event.deviceId);
      this.udids.delete(event.deviceId);
      if (udid && ![...this.udids.values()].includes(udid)) this.onGone(udid);
      return;
    }
    // A phone on USB and on Wi-Fi shows twice under one UDID; USB is what this lab serves.
    if (event.connectionType !== 'USB') return;
    this.udids.set(event.deviceId, event.udid);
    const phone = await this.describe(event.udid);
    if (this.stopped || ![...this.udids.values()].includes(event.udid)) return;
    this.phones.set(event.udid, phone);
    this.emit('phone', phone);
  }

  private onGone(udid: string): void {
    const client = this.clients.get(udid);
    this.clients.delete(udid);
    void client?.close();
    if (!this.phones.delete(udid)) return;
    this.emit('gone', udid);
  }

  /** Reads what the phone is, then whether it can be driven. */
  private async describe(udid: string): Promise<Phone> {
    const known = this.phones.get(udid);
    const phone: Phone = known ?? { serial: udid, platform: 'ios', type: 'real', name: '', osVersion: '', state: 'offline', battery: null };
    const mux = await openUsbmux(this.address).catch(() => undefined);
    try {
      const paired = !!(await mux?.readPairRecord(udid));
      if (!paired && mux) {
        // Unpaired, a phone still tells its name and version outside a session.
        const lockdown = await mux.connectLockdown(udid);
        const name = await lockdown.getValue({ Key: 'DeviceName' }).catch(() => '');
        const version = await lockdown.getValue({ Key: 'ProductVersion' }).catch(() => '');
        const model = await lockdown.getValue({ Key: 'ProductType' }).catch(() => '');
        lockdown.close();
        this.log(`${udid} (${String(name)}) has not trusted this computer: ${UNTRUSTED_STEPS}`);
        return { ...phone, name: String(name || udid), osVersion: String(version), model: String(model) || undefined, state: 'unauthorized', steps: UNTRUSTED_STEPS };
      }
    } catch {
      // Lockdown refused the unpaired phone: listed with its UDID until it trusts this computer.
      return { ...phone, name: phone.name || udid, state: 'unauthorized', steps: UNTRUSTED_STEPS };
    } finally {
      mux?.close();
    }
    try {
      const [name, version, battery, model] = await readLockdownValues(this.address, udid, [
        { Key: 'DeviceName' },
        { Key: 'ProductVersion' },
        { Domain: 'com.apple.mobile.battery', Key: 'BatteryCurrentCapacity' },
        { Key: 'ProductType' },
      ]);
      const described = {
        ...phone,
        name: String(name ?? udid),
        osVersion: String(version ?? ''),
        battery: typeof battery === 'number' ? battery : null,
        model: model ? String(model) : undefined,
        steps: undefined,
      };
      if (await this.wdaReady(udid)) return { ...described, state: 'device' };
      const steps = wdaSteps(udid);
      this.log(`${udid} (${described.name}): ${steps}`);
      return { ...described, state: 'wda_unavailable', steps };
    } catch (error) {
      // The pair record no longer matches (the phone was erased or un-trusted): pairing again is the fix.
      this.log(`${udid}: lockdown session refused (${(error as Error).message}); the phone must trust this computer again`);
      return { ...phone, name: phone.name || udid, state: 'unauthorized', steps: UNTRUSTED_STEPS };
    }
  }

  private async wdaReady(udid: string): Promise<boolean> {
    try {
      const status = await this.wda(udid).request<{ ready?: boolean }>('GET', '/status', undefined, AbortSignal.timeout(WDA_STATUS_TIMEOUT_MS));
      return status?.ready !== false;
    } catch {
      return false;
    }
  }

  private async refresh(what: 'battery' | 'wda'): Promise<void> {
    for (const phone of this.phones.values()) {
      try {
        let updated: Phone | undefined;
        if (what === 'wda' && phone.state === 'wda_unavailable' && (await this.wdaReady(phone.serial))) updated = { ...phone, state: 'device', steps: undefined };
        if (what === 'battery' && phone.state === 'device') {
          const [battery] = await readLockdownValues(this.address, phone.serial, [{ Domain: 'com.apple.mobile.battery', Key: 'BatteryCurrentCapacity' }]);
          if (typeof battery === 'number' && battery !== phone.battery) updated = { ...phone, battery };
        }
        if (updated && this.phones.has(phone.serial)) {
          this.phones.set(phone.serial, updated);
          this.emit('phone', updated);
        }
      } catch {
        // Listen reports the phone leaving.
      }
    }
  }
}
