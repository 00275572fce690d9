import { setTimeout as delay } from 'node:timers/promises';
import type { ActionResult, DeviceAction, DeviceInfo, UiElement } from '../../../shared/api/devices.js';
import type { InstallBody, InstallResult } from '../../../shared/api/files.js';
import { conflict, invalid, notFound, ServiceError } from '../domain/errors.js';
import { posix } from 'node:path';
import type { Readable } from 'node:stream';
import { APP_DOCUMENTS_ROOT, PHONE_FILE_ROOTS } from '../../../shared/api/devices.js';
import { documentsPath, phonePath } from '../domain/phone-paths.js';
import { chainedRecording } from '../fleet/chained-recording.js';
import { FileMissing, type Phone, type PhoneDriver, type PhoneFileEntry, type PhoneShell, type PhoneSource, type ScreenRecording, type ShellHandlers, type TerminalSize } from '../fleet/types.js';
import type { DeviceAllocationRow } from '../store/devices.js';
import type { Stores } from '../store/index.js';
import { requireRole } from './auth.js';
import { VersionedCache } from './cache.js';
import type { AppFiles, DeviceAllocator } from './devices.js';
import type { LogLine } from '../../../shared/api/devices.js';
import { pngSize } from '../domain/image-size.js';
import { liveSource, LiveScreens, type FeedEnd, type Picture, type ScreenTarget, type SourceMemory, type Viewer } from './live-screen.js';
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
    // A path the phone does not have is the API's 404, not a device error.
    if (error instanceof FileMissing) throw new ServiceError('not_found', 'file_not_found', error.message);
    throw conflict('device_error', `The device did not ${what}: ${(error as Error).message}`);
  }
}

/** A folder the file explorer starts from (a phone's shared folder, an app's Documents): not a file to write or delete. */
/** Actions that only read the phone: a watcher may still ask them while a WebDriver run drives it. */
const READING: ReadonlySet<DeviceAction['type']> = new Set(['listApps', 'foregroundApp', 'getOrientation', 'screenSize']);

const isFileRoot = (path: string) => path === posix.dirname(path) || path === APP_DOCUMENTS_ROOT || (PHONE_FILE_ROOTS as readonly string[]).includes(path);

/**
 * The one way to drive a phone. REST device control, the live screen, /ws, /mcp and the assistant's tools all come
 * through here, so a phone obeys exactly one rule: the caller's organization holds it in an in_use allocation.
 * Another organization's phone is not found, never forbidden, so that its existence does not leak.
 */
export class DeviceControl {
  private readonly screens = new LiveScreens();
  /** The screen recording each allocation is making, by allocation id. */
  private readonly recordings = new Map<string, Promise<ScreenRecording>>();
  /**
   * Allocations' statuses until the next write to any of them: a live screen asks before every frame it sends (30 a
   * second per watched phone), and a row from SQLite for each was about a fifth of what relaying a frame cost.
   */
  private readonly statuses: VersionedCache;

  constructor(
    private readonly stores: Pick<Stores, 'devices' | 'sessionPartsVersion'>,
    private readonly allocator: Pick<DeviceAllocator, 'find'>,
    private readonly phones: PhoneSource,
    private readonly appFiles: AppFiles,
    private readonly activity: Activity,
    private readonly options: {
      screenMaxFps: number;
      /** Who drives the allocation's phone through a WebDriver run, if one does: the phone is then watch-only. */
      drivenBy?: (allocationId: string) => string | undefined;
    },
  ) {
    this.statuses = new VersionedCache(() => stores.sessionPartsVersion.value);
  }

  /**
   * A phone a WebDriver run drives is watch-only, for everyone: a tap or a key under the run's feet would fail it for
   * no fault of its own. Whoever means to act on it takes it over first, which ends the run as interrupted.
   */
  notDriven(row: DeviceAllocationRow): DeviceAllocationRow {
    const by = this.options.drivenBy?.(row.id);
    if (by !== undefined) {
      throw conflict('webdriver_running', `A WebDriver run of ${by} drives this phone: it is watch-only until the run ends. Take it over (POST /sessions/{sessionId}/webdriver-runs/{runId}/takeover) to end the run as interrupted and act on the phone.`);
    }
    return row;
  }

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
  async screenshot(scope: Scope, target: DeviceTarget): Promise<Picture> {
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

  /**
   * Model, OS, ABI, screen, battery and network: read from the phone on each call, so they are current. Not activity:
   * reading a phone's details, as reading lists, is what a dashboard does while nobody uses it.
   */
  info(scope: Scope, target: DeviceTarget): Promise<DeviceInfo> {
    const driver = this.driver(scope, target, false);
    return onPhone(() => driver.info(), 'report its details');
  }

  act(scope: Scope, target: DeviceTarget, action: DeviceAction, signal?: AbortSignal): Promise<ActionResult> {
    requireRole(scope.role, 'readwrite');
    if (!READING.has(action.type)) this.notDriven(this.holding(scope, target));
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
    const { id } = this.notDriven(this.use(scope, target));
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
    const device = this.notDriven(this.use(scope, target));
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
    // A source that never delivered a frame (screenrecord, minicap) is skipped for as long as this feed runs.
    const memory: SourceMemory = {};
    const screen: ScreenTarget = {
      key: id,
      source: ({ maxSize, video }) => liveSource(driver, { maxFps, maxSize, video }, memory),
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

  /** A lossless PNG captured now, never the live screen's JPEG: what a person saves as a screenshot. */
  async capture(scope: Scope, target: DeviceTarget): Promise<Buffer> {
    const driver = this.driver(scope, target);
    return onPhone(() => driver.screenshot(), 'take a screenshot');
  }

  /**
   * A shell on the phone, for a member who may change it (a shell can do anything the phone's shell user can).
   * Authorizes now, so that the API can refuse before it upgrades the connection.
   */
  shell(scope: Scope, target: DeviceTarget): { open(size: TerminalSize, handlers: ShellHandlers): Promise<PhoneShell>; ended(): FeedEnd | undefined } {
    requireRole(scope.role, 'readwrite');
    const { id } = this.notDriven(this.holding(scope, target));
    const driver = this.phones.driver(target.serial);
    if (!driver.openShell) {
      throw conflict('shell_unsupported', 'An iPhone offers no shell: iOS runs no shell for a connected computer, and its developer services do not include one.');
    }
    return { open: (size, handlers) => onPhone(() => driver.openShell!(size, handlers), 'open a shell'), ended: () => this.ended(id) };
  }

  /**
   * The entries of a folder. On Android a path under the shared folders; on an iPhone a path under /Documents in the
   * container of `app`, an app that shares its Documents.
   */
  async listFiles(scope: Scope, target: DeviceTarget, path: string, app?: string): Promise<Array<PhoneFileEntry & { path: string }>> {
    const { driver, at } = this.filesAt(scope, target, path, app);
    const entries = await onPhone(() => driver.listFiles!(at.path, at.app), 'list the folder');
    return entries
      .map((e) => ({ ...e, path: posix.join(at.path, e.name) }))
      .sort((a, b) => Number(b.type === 'directory') - Number(a.type === 'directory') || a.name.localeCompare(b.name));
  }

  async readFile(scope: Scope, target: DeviceTarget, path: string, app?: string): Promise<Readable> {
    const { driver, at } = this.filesAt(scope, target, path, app);
    return onPhone(() => driver.readFile!(at.path, at.app), 'send the file');
  }

  async writeFile(scope: Scope, target: DeviceTarget, path: string, content: Readable, app?: string): Promise<void> {
    requireRole(scope.role, 'readwrite');
    this.notDriven(this.holding(scope, target));
    const { driver, at } = this.filesAt(scope, target, path, app);
    if (isFileRoot(at.path)) throw invalid('path_not_allowed', 'Name the file to write, inside a folder.');
    await onPhone(() => driver.writeFile!(at.path, content, at.app), 'store the file');
  }

  /** Deletes a file, or a folder with what is in it; never one of the roots themselves. */
  async deleteFile(scope: Scope, target: DeviceTarget, path: string, app?: string): Promise<void> {
    requireRole(scope.role, 'readwrite');
    this.notDriven(this.holding(scope, target));
    const { driver, at } = this.filesAt(scope, target, path, app);
    if (isFileRoot(at.path)) throw invalid('path_not_allowed', `${at.path} itself cannot be deleted: name a file or folder inside it.`);
    if (!driver.deleteFile) throw conflict('files_unsupported', 'This device cannot delete its files.');
    await onPhone(() => driver.deleteFile!(at.path, at.app), 'delete it');
  }

  /** The apps whose files an iPhone opens (those that share their Documents), by name. */
  async fileApps(scope: Scope, target: DeviceTarget): Promise<Array<{ bundleId: string; name: string }>> {
    const driver = this.filesDriver(scope, target);
    if (!driver.fileApps) throw conflict('files_by_folder', 'An Android phone\'s files are browsed by folder (/sdcard, /data/local/tmp), not by app.');
    return onPhone(() => driver.fileApps!(), 'list the apps that share files');
  }

  /**
   * The driver and the checked place: a phone whose files are reached by app (an iPhone) needs the app and a path
   * under /Documents; one with a single file tree (Android) takes no app, and a path under its shared folders.
   */
  private filesAt(scope: Scope, target: DeviceTarget, path: string, app: string | undefined): { driver: PhoneDriver; at: { path: string; app?: string } } {
    const driver = this.filesDriver(scope, target);
    if (driver.fileApps) {
      if (!app) throw invalid('app_required', 'An iPhone\'s files are an app\'s Documents: name the app (app=<bundle id>); GET .../files/apps lists the apps that share them.');
      return { driver, at: { path: documentsPath(path), app } };
    }
    if (app !== undefined) throw invalid('app_not_allowed', 'An Android phone\'s files are browsed by folder, not by app: leave out app.');
    return { driver, at: { path: phonePath(path) } };
  }

  private filesDriver(scope: Scope, target: DeviceTarget): PhoneDriver {
    const driver = this.driver(scope, target);
    if (!driver.listFiles || !driver.readFile || !driver.writeFile) throw conflict('files_unsupported', 'This device does not offer its files.');
    return driver;
  }

  /**
   * The apps someone installed on the phone, named as the phone names them (an iPhone), else by the label a stored
   * file of the organization gives them, with the version where the phone says it.
   */
  async apps(scope: Scope, target: DeviceTarget): Promise<Array<{ packageName: string; label?: string; version?: string }>> {
    const driver = this.driver(scope, target);
    const listed = await onPhone(async () => {
      if (driver.installedAppDetails) return driver.installedAppDetails();
      const names = driver.installedApps ? await driver.installedApps() : (await driver.act({ type: 'listApps' })).apps ?? [];
      return names.map((packageName) => ({ packageName }) as { packageName: string; name?: string; version?: string });
    }, 'list its apps');
    const labels = this.appFiles.labels(scope);
    return listed.map(({ packageName, name, version }) => {
      const label = name ?? labels.get(packageName);
      return { packageName, ...(label ? { label } : {}), ...(version ? { version } : {}) };
    });
  }

  /**
   * Starts recording the screen; one recording per allocation at a time. `continuous`: no time limit (segments chained
   * past the phone's own, joined when it stops), for a run that lasts as long as it lasts.
   */
  async startRecording(scope: Scope, target: DeviceTarget, options: { continuous?: boolean } = {}): Promise<{ startedAt: Date; timeLimitSeconds: number }> {
    requireRole(scope.role, 'readwrite');
    const { id } = this.holding(scope, target);
    const driver = this.phones.driver(target.serial);
    if (!driver.startRecording) throw conflict('recording_unsupported', 'This device cannot record its screen.');
    this.dropEndedRecordings();
    if (this.recordings.has(id)) throw conflict('recording_running', 'The screen is being recorded already: stop that recording first.');
    const start = () => driver.startRecording!();
    const pending = onPhone(() => (options.continuous ? chainedRecording(start) : start()), 'start recording');
    this.recordings.set(id, pending);
    try {
      const recording = await pending;
      // When the phone's recorder runs, not when it was asked for: a phone busy with a long push starts it later.
      return { startedAt: new Date(), timeLimitSeconds: recording.timeLimitSeconds };
    } catch (error) {
      this.recordings.delete(id);
      throw error;
    }
  }

  /** Stops the allocation's recording and answers it as an MP4. */
  async stopRecording(scope: Scope, target: DeviceTarget): Promise<Buffer> {
    requireRole(scope.role, 'readwrite');
    // A running WebDriver run's recording is its own: it stops it once it is ending, when the phone is no longer driven.
    const { id } = this.notDriven(this.holding(scope, target));
    const pending = this.recordings.get(id);
    if (!pending) throw conflict('not_recording', 'The screen is not being recorded: start a recording first.');
    this.recordings.delete(id);
    const recording = await pending;
    return onPhone(() => recording.stop(), 'finish the recording');
  }

  /**
   * Runs `work` with the allocation's recording set aside around it (its segment kept, a new one started after), and
   * the live screen's encoder held back, for what ends every recorder on the phone and waits for none to be left; with
   * neither, just runs it.
   */
  async besideRecording<T>(allocationId: string, work: () => Promise<T>): Promise<T> {
    const release = this.holdLiveVideo(allocationId);
    try {
      const recording = await this.recordings.get(allocationId)?.catch(() => undefined);
      return await (recording?.aside ? recording.aside(work) : work());
    } finally {
      release?.();
    }
  }

  /** Holds the allocation's phone's live video back, where its driver has one; answers what releases it. */
  private holdLiveVideo(allocationId: string): (() => void) | undefined {
    const serial = this.stores.devices.get(allocationId)?.serial;
    try {
      return serial ? this.phones.driver(serial).holdLiveVideo?.() : undefined;
    } catch {
      return undefined; // no fleet drives it now: nothing of it to hold
    }
  }

  /** A recording whose allocation ended is stopped and thrown away: the phone's copy goes, and the next user's is theirs. */
  private dropEndedRecordings(): void {
    for (const [id, pending] of this.recordings) {
      if (!this.ended(id)) continue;
      this.recordings.delete(id);
      void pending.then((r) => r.stop()).catch(() => undefined);
    }
  }

  /** Why watching an allocation's phone must stop, or undefined while it is in_use. */
  private ended(id: string): FeedEnd | undefined {
    const status = this.statuses.memo(`status:${id}`, () => this.stores.devices.get(id)?.status);
    if (status === 'in_use') return undefined;
    return status === 'offline' ? 'device_offline' : 'device_released';
  }

  /** Ends every live screen: the engine is stopping. */
  close(): void {
    this.screens.close();
    for (const pending of this.recordings.values()) void pending.then((r) => r.cancel()).catch(() => undefined);
    this.recordings.clear();
  }
}
