import { setTimeout as delay } from 'node:timers/promises';
import type { ActionResult, DeviceAction, DeviceInfo, UiElement } from '../../../shared/api/devices.js';
import type { InstallBody, InstallResult } from '../../../shared/api/files.js';
import { conflict, invalid, notFound, ServiceError } from '../domain/errors.js';
import type { Phone, PhoneDriver, PhoneSource } from '../fleet/types.js';
import type { DeviceAllocationRow } from '../store/devices.js';
import type { Stores } from '../store/index.js';
import { requireRole } from './auth.js';
import type { AppFiles, DeviceAllocator } from './devices.js';
import type { LogLine } from '../../../shared/api/devices.js';
import { pngSize } from '../domain/image-size.js';
import { LiveScreens, preferLiveSource, screencapSource, type Frame, type FeedEnd, type ScreenTarget, type Viewer } from './live-screen.js';
import type { Activity } from './idle-release.js';
import type { Scope } from './scope.js';

/**
 * Which phone: its serial (a UDID on iOS). REST and the GUI address a phone within a session and pass its id too;
 * /ws and /mcp address it by serial alone, as the clients they serve do.
 */
export interface DeviceTarget {
  serial: string;
  sessionId?: string;
}

/** A phone that fails a command is a conflict with its state, not a bug of ours: the caller may retry. */
async function onPhone<T>(work: () => Promise<T>, what = 'complete the command'): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    throw conflict('device_error', `The device did not ${what}: ${(error as Error).message}`);
  }
}

/**
 * The one way to drive a phone. REST device control, the live screen, /ws, /mcp and the assistant's tools all come
 * through here, so a phone obeys exactly one rule: the caller's organization holds it in an in_use allocation.
 * Another organization's phone is not found, never forbidden, so that its existence does not leak.
 */
export class DeviceControl {
  private readonly screens = new LiveScreens();

  constructor(
    private readonly stores: Pick<Stores, 'devices'>,
    private readonly allocator: Pick<DeviceAllocator, 'find'>,
    private readonly phones: PhoneSource,
    private readonly appFiles: AppFiles,
    private readonly activity: Activity,
    private readonly options: { screenMaxFps: number },
  ) {}

  /** The allocation through which the caller drives the phone. Throws not_found, or device_not_in_use. */
  holding(scope: Scope, target: DeviceTarget): DeviceAllocationRow {
    const row = target.sessionId
      ? this.allocator.find(scope, target.sessionId, target.serial)
      : this.stores.devices.holding(target.serial);
    if (!row || row.organizationId !== scope.organization.id) throw notFound('device');
    if (row.status !== 'in_use' || row.serial !== target.serial) {
      throw conflict('device_not_in_use', `That device is ${row.status}; it can be driven only while in_use.`);
    }
    return row;
  }

  /** The allocation, authorized, and counted as used now: what keeps a phone from its idle release. */
  private use(scope: Scope, target: DeviceTarget): DeviceAllocationRow {
    const row = this.holding(scope, target);
    this.activity.touch(row.id);
    return row;
  }

  private driver(scope: Scope, target: DeviceTarget, used = true): PhoneDriver {
    if (used) this.use(scope, target);
    else this.holding(scope, target);
    return this.phones.driver(target.serial);
  }

  /** The screen: the live feed's newest frame while one runs (a real phone's screencap takes seconds), else a capture. */
  async screenshot(scope: Scope, target: DeviceTarget): Promise<Frame> {
    const row = this.use(scope, target);
    const latest = this.screens.latest(row.id);
    if (latest) return latest;
    const data = await onPhone(() => this.phones.driver(target.serial).screenshot(), 'take a screenshot');
    return { data, format: 'png', ...pngSize(data), source: 'screencap' };
  }

  elements(scope: Scope, target: DeviceTarget): Promise<UiElement[]> {
    const driver = this.driver(scope, target);
    return onPhone(() => driver.elements(), 'read its screen');
  }

  /** Model, OS, ABI, screen, battery and network: read from the phone on each call, so they are current. */
  /** Not activity: reading a phone's details, as reading lists, is what a dashboard does while nobody uses it. */
  info(scope: Scope, target: DeviceTarget): Promise<DeviceInfo> {
    const driver = this.driver(scope, target, false);
    return onPhone(() => driver.info(), 'report its details');
  }

  act(scope: Scope, target: DeviceTarget, action: DeviceAction, signal?: AbortSignal): Promise<ActionResult> {
    requireRole(scope.role, 'readwrite');
    const driver = this.driver(scope, target);
    return onPhone(() => driver.act(action, signal));
  }

  /**
   * Restarts the phone and resolves once it is back in_use, awake and unlocked. The allocation holds on: it goes
   * offline when the phone drops off the bus and in_use again when it returns, as for an unplugged cable, so a
   * phone away longer than the device grace period is released as device_lost.
   */
  async reboot(scope: Scope, target: DeviceTarget, options: { timeoutMs: number; pollMs?: number }): Promise<void> {
    requireRole(scope.role, 'readwrite');
    const { id } = this.use(scope, target);
    const driver = this.phones.driver(target.serial);
    // Back means seen away first. The fleet's events say so: a phone may be away for less than any polling interval.
    let away = false;
    const left = (phone: Phone) => {
      if (phone.serial === target.serial && phone.state !== 'device') away = true;
    };
    const gone = (serial: string) => {
      if (serial === target.serial) away = true;
    };
    this.phones.on('phone', left);
    this.phones.on('gone', gone);
    try {
      await onPhone(() => driver.reboot(), 'reboot');
      const deadline = Date.now() + options.timeoutMs;
      for (;;) {
        const row = this.stores.devices.get(id);
        if (!row || row.releasedAt !== null) throw conflict('device_released', 'The device was released while it rebooted.');
        if (away && row.status === 'in_use' && this.phones.get(target.serial)?.state === 'device') break;
        if (Date.now() > deadline) throw conflict('device_error', `The device did not come back within ${options.timeoutMs / 1000} s of its reboot.`);
        await delay(options.pollMs ?? 50);
      }
    } finally {
      this.phones.off('phone', left);
      this.phones.off('gone', gone);
    }
    // A phone restarts on its lock screen: wake it and go home, as before it was handed over. The driver is the
    // fleet's new one: an iPhone's WDA connections were closed when it left the bus.
    await onPhone(() => this.phones.driver(target.serial).prepare(), 'wake up after its reboot');
  }

  /**
   * Installs a stored, ready app file. The allocation recorded the phone's packages before it went in_use, so the
   * cleanup after release uninstalls what this adds.
   */
  async install(scope: Scope, target: DeviceTarget, body: InstallBody): Promise<InstallResult> {
    requireRole(scope.role, 'readwrite');
    const device = this.use(scope, target);
    const file = this.appFiles.readyFile(scope, body.file);
    if (file.platform !== device.platform) {
      throw invalid('wrong_platform', `The file is an ${file.platform} app; the device is ${device.platform}.`);
    }
    const driver = this.phones.driver(target.serial);
    await onPhone(() => driver.install(this.appFiles.pathOf(file)), 'install the app');
    if (body.launch) await onPhone(() => driver.act({ type: 'launchApp', packageName: file.bundleId! }), 'launch the app');
    return { file: file.id, status: 'installed', bundleId: file.bundleId!, launched: body.launch === true };
  }

  /**
   * The phone's live screen, for a caller who may watch it. Authorizes now, so that the API can refuse before it
   * upgrades the connection; `watch` adds a viewer later and returns how to leave.
   */
  liveScreen(scope: Scope, target: DeviceTarget): { watch(viewer: Viewer): () => void } {
    const { id } = this.holding(scope, target);
    const driver = this.phones.driver(target.serial);
    const maxFps = this.options.screenMaxFps;
    // A phone whose minicap never delivered a frame stays on screencap for as long as this feed runs.
    let liveFailed = false;
    const screen: ScreenTarget = {
      key: id,
      source: ({ maxSize }) =>
        driver.liveFrames && !liveFailed
          ? preferLiveSource(driver, maxFps, maxSize, () => (liveFailed = true))
          : screencapSource(driver, maxFps),
      ended: () => this.ended(id),
    };
    // A connected viewer is activity for as long as it watches.
    return {
      watch: (viewer) => {
        const leave = this.screens.watch(screen, viewer);
        const unhold = this.activity.hold(id);
        return () => {
          unhold();
          leave();
        };
      },
    };
  }

  /**
   * The phone's log, for a caller who may read it. Authorizes now, so that the API can refuse before it starts the
   * stream; `lines` follows the log until its signal aborts, and `ended` says when the allocation stopped holding it.
   */
  logs(scope: Scope, target: DeviceTarget): { lines(signal: AbortSignal): AsyncIterable<LogLine>; ended(): FeedEnd | undefined } {
    const { id } = this.use(scope, target);
    const driver = this.phones.driver(target.serial);
    if (!driver.logs) throw conflict('logs_unsupported', 'This device does not offer its log.');
    const activity = this.activity;
    // Following the log is activity while the stream is open: a job reading it is using the phone.
    async function* lines(signal: AbortSignal): AsyncIterable<LogLine> {
      const unhold = activity.hold(id);
      try {
        yield* driver.logs!(signal);
      } finally {
        unhold();
      }
    }
    return { lines, ended: () => this.ended(id) };
  }

  /** Why watching an allocation's phone must stop, or undefined while it is in_use. */
  private ended(id: string): FeedEnd | undefined {
    const status = this.stores.devices.get(id)?.status;
    if (status === 'in_use') return undefined;
    return status === 'offline' ? 'device_offline' : 'device_released';
  }

  /** Ends every live screen: the engine is stopping. */
  close(): void {
    this.screens.close();
  }
}
