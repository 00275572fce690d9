import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import type { Socket } from 'node:net';
import { withTimeout } from '../../domain/time.js';
import { endLeftovers } from '../guarded-child.js';
import type { Phone } from '../types.js';
import { IosDriver } from './driver.js';
import { formatUsbmuxdAddress, listen, openUsbmux, readLockdownValues, type MuxEvent, type UsbmuxdAddress } from './usbmux.js';
import { tunnel, WdaClient } from './wda-client.js';
import {
  DEFAULT_WDA_BUNDLE_ID, launchOf, manualSteps, startWda, WdaStartError, wdaStrategy, type StartedWda, type WdaLaunchOptions,
} from './wda-launcher.js';

const RETRY_MS = 2000;
const BATTERY_REFRESH_MS = 60_000;
/** A plugged-in iPhone tells its name, version and battery over lockdown in well under a second. */
const FIRST_LOOK_MS = 15_000;
/** How soon an iPhone whose lockdown did not answer is asked again. */
const READ_AGAIN_MS = 5_000;
/** appium-ios-device's words when lockdown sends nothing in time. */
const NO_ANSWER = /within the timeout|timed out/i;
/** A phone whose WDA is not answering is asked again this often: someone may be starting it from Xcode. */
const WDA_RECHECK_MS = 5000;
const WDA_STATUS_TIMEOUT_MS = 3000;
/** After a failed start, the next try waits this long, doubling up to the cap: a phone that cannot start WDA is not hammered. */
const WDA_START_BACKOFF_MS = 30_000;
const WDA_START_BACKOFF_CAP_MS = 10 * 60_000;
/** How long a started runner has to answer /status. */
const WDA_START_READY_MS = 30_000;

/** The engine's attempts to start WDA on one attached phone. */
interface WdaStart {
  running?: StartedWda;
  /** The run's processes (go-ios) ended on their own: WDA went with them. */
  ended?: boolean;
  inFlight: boolean;
  failures: number;
  retryAt: number;
  /** Why the phone is wda_unavailable now, with the steps; undefined while it is not. */
  problem?: string;
}

/** What an iPhone that has not trusted this computer needs; the fleet shows it, and the log says it. */
const UNTRUSTED_STEPS = 'Unlock the iPhone and tap "Trust" on "Trust This Computer?" (enter its passcode), then unplug it and plug it in again.';

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
  private readonly starts = new Map<string, WdaStart>();
  private readonly rechecking = new Set<string>();
  /** iPhones whose lockdown did not answer, each with its next try: one at a time per phone, none once it is gone. */
  private readonly readAgain = new Map<string, NodeJS.Timeout>();

  constructor(
    readonly address: UsbmuxdAddress,
    private readonly log: (message: string) => void,
    private readonly launch: WdaLaunchOptions = { bundleId: DEFAULT_WDA_BUNDLE_ID, xcrun: null },
    /** How long the first look waits for the iPhones already plugged in to say who they are. */
    private readonly firstLookMs = FIRST_LOOK_MS,
  ) {
    super();
  }

  /** Why a phone is wda_unavailable ("starting WebDriverAgent…" while the engine starts it), with the steps to fix it. */
  wdaProblem(serial: string): string | undefined {
    return this.phones.get(serial)?.state === 'wda_unavailable' ? this.starts.get(serial)?.problem : undefined;
  }

  /** Resolves once the attached phones have been read, or after a first failure (it keeps retrying). */
  async start(): Promise<void> {
    // What a crashed engine of this data dir left running: its go-ios tunnels and runners.
    if (this.launch.goIos) endLeftovers(this.launch.goIos.pidDir, this.log);
    await this.subscribe();
    this.timers.push(setInterval(() => void this.refresh('battery'), BATTERY_REFRESH_MS), setInterval(() => void this.refresh('wda'), WDA_RECHECK_MS));
    for (const t of this.timers) t.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    for (const t of this.timers) clearInterval(t);
    for (const t of this.readAgain.values()) clearTimeout(t);
    this.readAgain.clear();
    // Taken before the Listen closes: its end counts the phones gone, and onGone would close their runs unawaited.
    const closing = [...this.starts.values()].map((start) => start.running?.close());
    this.starts.clear();
    this.subscription?.close();
    const clients = [...this.clients.values()].map((c) => c.close());
    this.clients.clear();
    // Nothing of go-ios outlives the fleet, nor the loopback usbmuxd a provider's phone's go-ios had.
    await Promise.all([...clients, ...closing]);
  }

  list(): Phone[] {
    return [...this.phones.values()];
  }

  get(serial: string): Phone | undefined {
    return this.phones.get(serial);
  }

  driver(serial: string): IosDriver {
    return new IosDriver(this.address, serial, this.wda(serial), (port) => this.phonePort(serial, port));
  }

  /**
   * A connection to a port of WebDriverAgent's (8100, 9100) on the phone, by the way its run reaches it: through the
   * tunnel go-ios opened for it, or usbmuxd's Connect.
   */
  phonePort(udid: string, port: number): Promise<Socket> {
    const running = this.starts.get(udid)?.running;
    return running?.connect ? running.connect(port) : tunnel(this.address, udid, port);
  }

  /** A connection to the phone's port through the tunnel its WDA runs in; undefined when it runs in none. */
  tunnelPort(udid: string, port: number): Promise<Socket> | undefined {
    return this.starts.get(udid)?.running?.connect?.(port);
  }

  /** The go-ios tunnel of a phone, while it has one (for a test, or a leak check). */
  tunnelOf(udid: string) {
    return this.starts.get(udid)?.running?.tunnel;
  }

  private wda(udid: string): WdaClient {
    let client = this.clients.get(udid);
    if (!client) {
      client = new WdaClient(this.address, udid, () => void this.wdaLost(udid), (port) => this.phonePort(udid, port));
      this.clients.set(udid, client);
    }
    return client;
  }

  private async subscribe(): Promise<void> {
    // No socket, no usbmuxd (Linux without the usbmuxd package, or before udev started it for a first iPhone):
    // appium-ios-device, most of a second to load, is not loaded until there is one.
    // That is the normal state of a lab with no iPhone plugged in, not a fault, and the line says so in those words.
    if ('path' in this.address && !existsSync(this.address.path)) {
      return this.scheduleRetry(`iPhones join when usbmuxd runs: it starts when one is plugged in (on Linux, from the usbmuxd package). Watching ${this.address.path}.`, false);
    }
    try {
      const pending: Array<Promise<void>> = [];
      this.subscription = await listen(this.address, (event) => pending.push(this.onEvent(event)));
      this.lastProblem = undefined;
      // Listen answers with an Attached message per phone already plugged in: the first look is those.
      await new Promise((r) => setTimeout(r, 50));
      // Bounded, as the Android fleet's: an iPhone whose lockdown stopped answering (a bad cable) joins when it answers,
      // and the first look, which the allocator waits for, does not wait for it.
      await withTimeout(Promise.all(pending), this.firstLookMs, 'Reading the iPhones already plugged in').catch((error: Error) =>
        this.log(`${error.message}: those that answered are listed, each other one joins once it answers`));
      void this.subscription.closed.then(() => {
        for (const udid of [...this.phones.keys()]) this.onGone(udid);
        this.scheduleRetry('usbmuxd closed the Listen connection');
      });
    } catch (error) {
      this.scheduleRetry((error as Error).message);
    }
  }

  private scheduleRetry(why: string, fault = true): void {
    if (this.stopped) return;
    if (why !== this.lastProblem) this.log(fault ? `usbmuxd at ${formatUsbmuxdAddress(this.address)}: ${why}; retrying every ${RETRY_MS / 1000} s` : why);
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
    await this.publish(event.udid);
  }

  /** Reads what the phone is and lists it, unless it was unplugged (or the fleet stopped) meanwhile. */
  private async publish(udid: string): Promise<void> {
    const phone = await this.describe(udid);
    if (this.stopped || ![...this.udids.values()].includes(udid)) return;
    this.phones.set(udid, phone);
    this.emit('phone', phone);
  }

  private onGone(udid: string): void {
    clearTimeout(this.readAgain.get(udid));
    this.readAgain.delete(udid);
    // A new attach is a new chance: the next one tries to start WDA again at once. Its tunnel, if any, ends here.
    this.starts.get(udid)?.running?.close();
    this.starts.delete(udid);
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
      // Answering before the lab started anything: someone else runs it (Xcode, devicectl, their own go-ios).
      if (await this.wdaReady(udid)) return { ...described, state: 'device', wdaLaunch: 'external' };
      // Not answering: start the installed runner, once per attach, after this description is published; the
      // attempt's progress or failure replaces these steps.
      setImmediate(() => this.startWdaOn(udid));
      return { ...described, state: 'wda_unavailable', wdaLaunch: undefined, steps: this.starts.get(udid)?.problem ?? `WebDriverAgent is not answering on port 8100, so it cannot be allocated yet.` };
    } catch (error) {
      const message = (error as Error).message;
      if (NO_ANSWER.test(message)) {
        // Not a refusal: the phone said nothing in time (a bad cable). Listed offline and read again until it answers;
        // said once, not at every try.
        if (!this.readAgain.has(udid)) this.log(`${udid}: lockdown did not answer (${message}); trying again every ${READ_AGAIN_MS / 1000} s`);
        this.readAgainLater(udid);
        return { ...phone, name: phone.name || udid, state: 'offline', steps: undefined };
      }
      // The pair record no longer matches (the phone was erased or un-trusted): pairing again is the fix.
      this.log(`${udid}: lockdown session refused (${message}); the phone must trust this computer again`);
      return { ...phone, name: phone.name || udid, state: 'unauthorized', steps: UNTRUSTED_STEPS };
    }
  }

  /**
   * Reads a phone again after READ_AGAIN_MS, if it is still plugged in then. Its entry stays while the tries fail (a
   * failed one sets the next), so that the phone's silence is said once.
   */
  private readAgainLater(udid: string): void {
    clearTimeout(this.readAgain.get(udid));
    const timer = setTimeout(async () => {
      if (!this.stopped && this.phones.has(udid)) await this.publish(udid);
      if (this.readAgain.get(udid) === timer) this.readAgain.delete(udid);
    }, READ_AGAIN_MS);
    timer.unref();
    this.readAgain.set(udid, timer);
  }

  private async wdaReady(udid: string): Promise<boolean> {
    try {
      const status = await this.wda(udid).request<{ ready?: boolean }>('GET', '/status', undefined, AbortSignal.timeout(WDA_STATUS_TIMEOUT_MS));
      return status?.ready !== false;
    } catch {
      return false;
    }
  }

  /**
   * Starts WDA's installed runner the way this host can (wda-launcher.ts), unless a start is under way or the last
   * one failed less than its back-off ago. The phone stays wda_unavailable meanwhile, its problem saying so.
   */
  private startWdaOn(udid: string): void {
    const phone = this.phones.get(udid);
    if (this.stopped || phone?.state !== 'wda_unavailable') return;
    let start = this.starts.get(udid);
    if (!start) this.starts.set(udid, (start = { inFlight: false, failures: 0, retryAt: 0 }));
    if (start.inFlight || Date.now() < start.retryAt) return;
    const attempt = start;
    const strategy = wdaStrategy(phone.osVersion, this.launch.xcrun, !!this.launch.goIos);
    if (strategy === 'none') {
      // Nothing this host can do: the steps, once; the 5 s /status recheck picks up a WDA someone else starts.
      attempt.problem = `WebDriverAgent is not answering on port 8100, so it cannot be allocated. ${manualSteps(udid, phone.osVersion, this.launch.bundleId)}`;
      attempt.retryAt = Number.POSITIVE_INFINITY;
      this.log(`${udid} (${phone.name}): ${attempt.problem}`);
      this.showSteps(udid, attempt.problem);
      return;
    }
    attempt.inFlight = true;
    attempt.problem = `starting WebDriverAgent (${this.launch.bundleId}) through ${strategy}…`;
    this.log(`${udid} (${phone.name}): ${attempt.problem}`);
    this.showSteps(udid, attempt.problem);
    const begun = Date.now();
    void (async () => {
      try {
        attempt.running?.close();
        attempt.ended = false;
        attempt.running = await startWda(this.address, udid, phone.osVersion, this.launch, () => this.runEnded(udid, attempt), this.log);
        const deadline = Date.now() + WDA_START_READY_MS;
        while (!(await this.wdaReady(udid))) {
          if (this.stopped || this.starts.get(udid) !== attempt) return attempt.running.close();
          // go-ios's runwda or tunnel ended before WDA answered: its last words say why.
          if (attempt.ended) throw new WdaStartError(`go-ios ended before WebDriverAgent answered: ${attempt.running.tunnel?.lastComplaint() ?? 'no reason given'}`);
          if (Date.now() > deadline) throw new WdaStartError(`the runner started but WDA did not answer /status within ${WDA_START_READY_MS / 1000} s`);
          await new Promise((r) => setTimeout(r, 50));
        }
        if (this.starts.get(udid) !== attempt) return attempt.running.close();
        attempt.failures = 0;
        attempt.problem = undefined;
        this.log(`${udid} (${phone.name}): WebDriverAgent started through ${attempt.running.via} in ${Date.now() - begun} ms`);
        this.publishWda(udid, true, launchOf(attempt.running.via));
      } catch (error) {
        attempt.running?.close();
        attempt.running = undefined;
        if (this.starts.get(udid) !== attempt) return;
        const backoff = Math.min(WDA_START_BACKOFF_MS * 2 ** attempt.failures, WDA_START_BACKOFF_CAP_MS);
        attempt.failures++;
        attempt.retryAt = Date.now() + backoff;
        const reason = error instanceof WdaStartError ? error.message : `starting WebDriverAgent failed: ${(error as Error).message}`;
        attempt.problem = reason;
        this.showSteps(udid, reason);
        this.log(`${udid} (${phone.name}): WebDriverAgent is unavailable: ${reason} Trying again in ${Math.round(backoff / 1000)} s; it is also picked up within 5 s of answering.`);
      } finally {
        attempt.inFlight = false;
      }
    })();
  }

  /**
   * A request found nothing listening on port 8100 of a phone the fleet shows as `device`: WDA died (it crashed, or
   * someone stopped the runner). Checked at once rather than at the next 5 s check; if it is really gone the phone is
   * wda_unavailable (its allocation goes offline) and the runner is started again, as on attach.
   */
  private async wdaLost(udid: string): Promise<void> {
    if (this.stopped || this.phones.get(udid)?.state !== 'device' || this.rechecking.has(udid)) return;
    this.rechecking.add(udid);
    try {
      if (await this.wdaReady(udid)) return;
      if (this.phones.get(udid)?.state !== 'device') return;
      this.log(`${udid}: WebDriverAgent stopped answering; starting it again`);
      // A new chance, as after a replug: the runner this engine started (if any) is dead, and a back-off from an
      // earlier failure does not apply to a WDA that was working a moment ago.
      this.starts.get(udid)?.running?.close();
      this.starts.delete(udid);
      this.publishWda(udid, false);
      this.startWdaOn(udid);
    } finally {
      this.rechecking.delete(udid);
    }
  }

  /**
   * A process the run lives in (go-ios's tunnel or runwda) ended on its own while the phone is attached: during a
   * start, the start fails with its reason; after, WDA is gone, and it is started again as when it dies (wdaLost).
   */
  private runEnded(udid: string, attempt: WdaStart): void {
    if (this.stopped || this.starts.get(udid) !== attempt) return;
    attempt.ended = true;
    if (attempt.inFlight) return;
    this.log(`${udid}: the go-ios process WebDriverAgent ran through ended; starting it again`);
    attempt.running?.close();
    this.starts.delete(udid);
    this.publishWda(udid, false);
    this.startWdaOn(udid);
  }

  /** A wda_unavailable phone's row says what is happening about it: the start under way, or why it failed and what to do. */
  private showSteps(udid: string, steps: string): void {
    const phone = this.phones.get(udid);
    if (phone?.state !== 'wda_unavailable' || phone.steps === steps) return;
    const updated: Phone = { ...phone, steps };
    this.phones.set(udid, updated);
    this.emit('phone', updated);
  }

  private publishWda(udid: string, ready: boolean, launch?: Phone['wdaLaunch']): void {
    const phone = this.phones.get(udid);
    if (!phone || (phone.state === 'device') === ready) return;
    const updated: Phone = { ...phone, state: ready ? 'device' : 'wda_unavailable', steps: ready ? undefined : phone.steps, wdaLaunch: ready ? launch : undefined };
    this.phones.set(udid, updated);
    this.emit('phone', updated);
  }

  private async refresh(what: 'battery' | 'wda'): Promise<void> {
    for (const phone of this.phones.values()) {
      try {
        let updated: Phone | undefined;
        if (what === 'wda' && phone.state === 'wda_unavailable') {
          if (await this.wdaReady(phone.serial)) {
            const start = this.starts.get(phone.serial);
            // A start under way publishes the phone itself, saying how WDA runs: answering before that start has
            // returned (a slow machine) is its WDA, not someone else's.
            if (start?.inFlight) continue;
            if (start) start.problem = undefined;
            updated = { ...phone, state: 'device', steps: undefined, wdaLaunch: start?.running ? launchOf(start.running.via) : 'external' };
          } else this.startWdaOn(phone.serial);
        }
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
