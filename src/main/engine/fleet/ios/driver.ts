import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { XMLParser } from 'fast-xml-parser';
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { posix } from 'node:path';
import type { Readable } from 'node:stream';
import { conflict, invalid, ServiceError } from '../../domain/errors.js';
import { FileMissing, type ActionResult, type DeviceAction, type DeviceInfo, type LiveFrame, type LogLine, type PhoneBaseline, type PhoneDriver, type PhoneFileEntry, type ScreenRecording, type UiElement } from '../types.js';
import {
  afcService, documentsService, HouseArrestRefused, installationProxy, readLockdownValues, restartDevice, syslogService, type AfcClient, type UsbmuxdAddress,
} from './usbmux.js';
import { addedFiles, LISTING_BOUNDS } from '../../domain/added-files.js';
import { installationProblem } from './installation-errors.js';
import { cancelRecordings, recordScreen } from './recording.js';
import { tunnel, WDA_MJPEG_PORT, WdaClient } from './wda-client.js';
import { jpegSize } from '../../domain/image-size.js';

/** Apps every iPhone has that cleanup leaves running state of: the ones this lab's users open most. */
const SYSTEM_APPS = ['com.apple.Preferences', 'com.apple.mobilesafari', 'com.apple.mobilenotes', 'com.apple.mobiletimer'];
/** The bundle-id prefix of WebDriverAgent's runner, which cleanup must never uninstall or stop. */
const WDA_RUNNER = 'com.facebook.WebDriverAgentRunner';

/** Element types a person taps: WDA's source has no "clickable", so it follows from the type. */
const TAPPABLE = new Set([
  'XCUIElementTypeButton', 'XCUIElementTypeCell', 'XCUIElementTypeIcon', 'XCUIElementTypeLink', 'XCUIElementTypeSwitch',
  'XCUIElementTypeTextField', 'XCUIElementTypeSecureTextField', 'XCUIElementTypeTextView', 'XCUIElementTypeSearchField',
  'XCUIElementTypeMenuItem', 'XCUIElementTypeTab', 'XCUIElementTypeSegmentedControl', 'XCUIElementTypeKey',
]);
const CONTAINERS = new Set(['XCUIElementTypeApplication', 'XCUIElementTypeWindow', 'XCUIElementTypeOther']);

type XmlNode = Record<string, unknown> & { ':@'?: Record<string, string> };
// htmlEntities: WDA's XML writes a newline in a value as &#10;, which the five XML entities alone leave as it is.
const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', preserveOrder: true, htmlEntities: true });

/**
 * WDA's /source (XCUIElementType elements, in points) flattened to the shared element shape, in screenshot pixels:
 * the label is the text (the value for fields), the name the id. Layout containers without a label are left out.
 */
export function parseWdaSource(source: string, scale: number): UiElement[] {
  const out: UiElement[] = [];
  const walk = (nodes: XmlNode[]) => {
    for (const n of nodes) {
      const type = Object.keys(n).find((k) => k !== ':@');
      if (!type || type.startsWith('?')) continue;
      const a = n[':@'] ?? {};
      const isField = /TextField|TextView|SearchField/.test(type);
      const element: UiElement = {
        text: String((isField ? a.value : a.label ?? a.value) ?? ''),
        contentDescription: String(a.label ?? ''),
        resourceId: String(a.name ?? ''),
        className: type,
        bounds: {
          x: Math.round(Number(a.x ?? 0) * scale),
          y: Math.round(Number(a.y ?? 0) * scale),
          width: Math.round(Number(a.width ?? 0) * scale),
          height: Math.round(Number(a.height ?? 0) * scale),
        },
        clickable: TAPPABLE.has(type),
      };
      const labelled = element.text.trim() || element.contentDescription.trim() || element.resourceId.trim();
      if (a.visible !== 'false' && (element.clickable || (labelled && !CONTAINERS.has(type)))) out.push(element);
      walk((n[type] as XmlNode[] | undefined) ?? []);
    }
  };
  walk(xml.parse(source) as XmlNode[]);
  return out;
}

/** One finger's W3C pointer actions: down at the start, through the moves, up at the end. */
function pointer(points: Array<{ x: number; y: number; ms: number }>, holdMs: number) {
  const [first, ...rest] = points;
  return [
    {
      type: 'pointer',
      id: 'finger1',
      parameters: { pointerType: 'touch' },
      actions: [
        { type: 'pointerMove', duration: 0, x: first!.x, y: first!.y },
        { type: 'pointerDown', button: 0 },
        { type: 'pause', duration: holdMs },
        ...rest.map((p) => ({ type: 'pointerMove', duration: p.ms, x: p.x, y: p.y })),
        { type: 'pointerUp', button: 0 },
      ],
    },
  ];
}

/**
 * Drives one iPhone: WebDriverAgent for the screen, input and apps, installation_proxy and AFC for installs, all
 * through usbmuxd. The API's coordinates are screenshot pixels, as on Android; WDA's are points, `scale` times fewer.
 */
export class IosDriver implements PhoneDriver {
  private scaleValue: number | undefined;

  constructor(
    private readonly address: UsbmuxdAddress,
    readonly udid: string,
    readonly wda: WdaClient,
    /** How WDA's MJPEG port is reached (an iOS 17.4+ phone's go-ios tunnel); usbmuxd's Connect when absent. */
    private readonly route?: (port: number) => Promise<Socket>,
  ) {}

  private async scale(): Promise<number> {
    this.scaleValue ??= (await this.wda.command<{ scale: number }>('GET', '/wda/screen')).scale || 1;
    return this.scaleValue;
  }

  private async points(...values: number[]): Promise<number[]> {
    const s = await this.scale();
    return values.map((v) => Math.round(v / s));
  }

  /** Lockdown's values for the model, OS, CPU and battery; WDA's for the screen (points times scale, in pixels). */
  async info(): Promise<DeviceInfo> {
    const [[type, version, arch, level, charging], size, scale] = await Promise.all([
      readLockdownValues(this.address, this.udid, [
        { Key: 'ProductType' },
        { Key: 'ProductVersion' },
        { Key: 'CPUArchitecture' },
        { Domain: 'com.apple.mobile.battery', Key: 'BatteryCurrentCapacity' },
        { Domain: 'com.apple.mobile.battery', Key: 'BatteryIsCharging' },
      ]),
      this.wda.command<{ width: number; height: number }>('GET', '/window/size'),
      this.scale(),
    ]);
    return {
      serial: this.udid,
      platform: 'ios',
      manufacturer: 'Apple',
      model: String(type ?? ''),
      osVersion: String(version ?? ''),
      sdk: null,
      abi: String(arch ?? ''),
      screen: { width: Math.round(size.width * scale), height: Math.round(size.height * scale), density: null },
      battery: { level: typeof level === 'number' ? level : null, charging: typeof charging === 'boolean' ? charging : null },
      network: { wifi: null, airplaneMode: null },
    };
  }

  /** The apps someone installed: not iOS's own (ApplicationType System), which the Apps tab must not offer to remove. */
  async installedApps(): Promise<string[]> {
    return (await this.userApps()).filter((id) => !id.startsWith(WDA_RUNNER));
  }

  /** The installed apps with the names and versions their Info.plist gives (CFBundleDisplayName, CFBundleShortVersionString, CFBundleVersion). */
  async installedAppDetails(): Promise<Array<{ packageName: string; name?: string; version?: string }>> {
    const proxy = await installationProxy(this.address, this.udid);
    try {
      const apps = await proxy.listApplications({ applicationType: 'User', returnAttributes: ['CFBundleIdentifier', 'CFBundleDisplayName', 'CFBundleName', 'CFBundleShortVersionString', 'CFBundleVersion'] });
      const text = (value: unknown) => (typeof value === 'string' && value.trim() ? value.trim() : undefined);
      return Object.entries(apps)
        .filter(([id]) => !id.startsWith(WDA_RUNNER))
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([packageName, info]) => {
          const plist = (info ?? {}) as Record<string, unknown>;
          const name = text(plist.CFBundleDisplayName) ?? text(plist.CFBundleName);
          const short = text(plist.CFBundleShortVersionString);
          const build = text(plist.CFBundleVersion);
          // "2.0 (7)", as the App Store and TestFlight write a version with its build.
          const version = short && build && build !== short ? `${short} (${build})` : short ?? build;
          return { packageName, ...(name ? { name } : {}), ...(version ? { version } : {}) };
        });
    } finally {
      proxy.close();
    }
  }

  /** Bundle ids of the apps a user installed (ApplicationType User), WDA's runner included. */
  async userApps(): Promise<string[]> {
    const proxy = await installationProxy(this.address, this.udid);
    try {
      return Object.keys(await proxy.listApplications({ applicationType: 'User', returnAttributes: ['CFBundleIdentifier'] })).sort();
    } finally {
      proxy.close();
    }
  }

  async prepare(): Promise<PhoneBaseline> {
    if (await this.wda.command<boolean>('GET', '/wda/locked')) await this.wda.command('POST', '/wda/unlock');
    await this.wda.request('POST', '/wda/homescreen');
    // Two readings of what is there now, for the release to put back, at once on two lockdown services' connections.
    const [files, packages] = await Promise.all([this.documentFiles(), this.userApps()]);
    return { packages, ...(files ? { files } : {}) };
  }

  async cleanup(baseline: PhoneBaseline): Promise<void> {
    cancelRecordings(this.udid);
    const before = new Set(baseline.packages);
    const apps = await this.userApps();
    const added = apps.filter((id) => !before.has(id) && !id.startsWith(WDA_RUNNER));
    if (added.length) {
      const proxy = await installationProxy(this.address, this.udid);
      try {
        for (const id of added) await proxy.uninstallApplication(id);
      } finally {
        proxy.close();
      }
    }
    if (baseline.files) await this.removeAddedDocuments(baseline.files);
    // iOS 15 and later let WDA write the pasteboard only while its runner is in front (Appium's XCUITest docs).
    const runner = apps.find((a) => a.startsWith(WDA_RUNNER));
    if (runner) await this.wda.command('POST', '/wda/apps/activate', { bundleId: runner });
    await this.wda.command('POST', '/wda/setPasteboard', { content: '', contentType: 'plaintext' });
    for (const id of [...apps.filter((a) => !added.includes(a) && !a.startsWith(WDA_RUNNER)), ...SYSTEM_APPS]) {
      await this.wda.command('POST', '/wda/apps/terminate', { bundleId: id });
    }
    await this.wda.request('POST', '/wda/homescreen');
    await this.wda.command('POST', '/orientation', { orientation: 'PORTRAIT' });
  }

  /**
   * Every entry in the Documents of the apps that share them (house_arrest reaches no other part of a container), as
   * `<bundle id>:<path>`; undefined past LISTING_BOUNDS, or when a container cannot be read to the end.
   */
  private async documentFiles(): Promise<string[] | undefined> {
    const deadline = Date.now() + LISTING_BOUNDS.ms;
    const entries: string[] = [];
    try {
      for (const { bundleId } of await this.fileApps()) {
        const complete = await this.inDocuments(bundleId, async (afc) => {
          const walk = async (folder: string): Promise<boolean> => {
            for (const name of (await afc.listDirectory(folder)).filter((n) => n !== '.' && n !== '..')) {
              const path = posix.join(folder, name);
              entries.push(`${bundleId}:${path}`);
              if (entries.length > LISTING_BOUNDS.entries || Date.now() > deadline) return false;
              if ((await afc.getFileInfo(path)).isDirectory() && !(await walk(path))) return false;
            }
            return true;
          };
          return walk('/Documents');
        });
        if (!complete) return undefined;
      }
    } catch {
      return undefined;
    }
    return entries;
  }

  /** Removes what was added to the shared Documents of the apps that stay since `before` was listed. */
  private async removeAddedDocuments(before: readonly string[]): Promise<void> {
    const now = await this.documentFiles();
    if (!now) return;
    const byApp = new Map<string, string[]>();
    for (const entry of addedFiles(before, now)) {
      const colon = entry.indexOf(':');
      byApp.set(entry.slice(0, colon), [...(byApp.get(entry.slice(0, colon)) ?? []), entry.slice(colon + 1)]);
    }
    for (const [app, paths] of byApp) {
      await this.inDocuments(app, async (afc) => {
        for (const path of paths) await afc.deleteDirectory(path);
      });
    }
  }

  /**
   * Stages the IPA in the media partition's PublicStaging through AFC, then has installation_proxy install it from
   * there (as ideviceinstaller and Xcode do); the staged copy is removed whatever happens.
   */
  async install(ipaPath: string): Promise<void> {
    const staged = `PublicStaging/benchtop-${randomUUID()}.ipa`;
    const afc = await afcService(this.address, this.udid);
    try {
      await afc.createDirectory('PublicStaging');
      const stream = await afc.createWriteStream(staged, { autoDestroy: true });
      await pipeline(createReadStream(ipaPath), stream);
    } catch (error) {
      afc.close();
      throw error;
    }
    try {
      const proxy = await installationProxy(this.address, this.udid);
      try {
        await proxy.installApplication(staged, { PackageType: 'Developer' }, 300_000).catch((error: Error) => {
          throw installationProblem(error, 'the app');
        });
      } finally {
        proxy.close();
      }
    } finally {
      await afc.deleteDirectory(staged).catch(() => undefined);
      afc.close();
    }
  }

  /** The apps that share their Documents (UIFileSharingEnabled), as `ifuse --list-apps` finds them: by name. */
  async fileApps(): Promise<Array<{ bundleId: string; name: string }>> {
    const proxy = await installationProxy(this.address, this.udid);
    try {
      const apps = await proxy.listApplications({ applicationType: 'Any', returnAttributes: ['CFBundleIdentifier', 'CFBundleDisplayName', 'CFBundleName', 'UIFileSharingEnabled'] });
      return Object.entries(apps)
        .filter(([, a]) => a.UIFileSharingEnabled === true)
        .map(([bundleId, a]) => ({ bundleId, name: String(a.CFBundleDisplayName || a.CFBundleName || bundleId) }))
        .sort((a, b) => a.name.localeCompare(b.name));
    } finally {
      proxy.close();
    }
  }

  /**
   * AFC in the app's container through house_arrest's VendDocuments, its refusals in the API's words. (DeviceControl
   * refuses a call without an app before it gets here.)
   */
  private async documents(app: string | undefined): Promise<AfcClient> {
    if (!app) throw new Error('an iPhone\'s files are reached by app');
    try {
      return await documentsService(this.address, this.udid, app);
    } catch (error) {
      if (error instanceof HouseArrestRefused && error.reason === 'ApplicationLookupFailed') {
        throw new ServiceError('not_found', 'app_not_found', `${app} is not installed on this iPhone.`);
      }
      if (error instanceof HouseArrestRefused && error.reason === 'InstallationLookupFailed') {
        throw conflict('documents_not_shared', `${app} does not share its Documents: iOS opens them only for apps whose Info.plist sets UIFileSharingEnabled.`);
      }
      throw error;
    }
  }

  /** The app's AFC connection for `work`, closed after it. */
  private async inDocuments<T>(app: string | undefined, work: (afc: AfcClient) => Promise<T>): Promise<T> {
    const afc = await this.documents(app);
    try {
      return await work(afc);
    } finally {
      afc.close();
    }
  }

  /** AFC's READ_DIR, then each entry's GET_FILE_INFO (AFC lists names only). */
  listFiles(path: string, app?: string): Promise<PhoneFileEntry[]> {
    return this.inDocuments(app, async (afc) => {
      const names = await afc.listDirectory(path).catch((error: Error) => {
        throw missing(error, `No folder ${path} in ${app}'s container.`);
      });
      const entries: PhoneFileEntry[] = [];
      for (const name of names.filter((n) => n !== '.' && n !== '..')) {
        const info = await afc.getFileInfo(posix.join(path, name));
        const directory = info.isDirectory();
        entries.push({ name, type: directory ? 'directory' : 'file', size: directory ? 0 : info.size, modifiedAt: new Date(info.mtimeMs) });
      }
      return entries;
    });
  }

  /** AFC's FILE_OPEN (read) and FILE_READ, streamed; the connection closes with the stream. */
  async readFile(path: string, app?: string): Promise<Readable> {
    const afc = await this.documents(app);
    try {
      const info = await afc.getFileInfo(path).catch((error: Error) => {
        throw missing(error, `No file ${path} in ${app}'s container.`);
      });
      if (!info.isFile()) throw new FileMissing(`No file ${path} in ${app}'s container.`);
      const stream = await afc.createReadStream(path, { autoDestroy: true });
      stream.once('close', () => afc.close());
      return stream;
    } catch (error) {
      afc.close();
      throw error;
    }
  }

  /** AFC's FILE_OPEN (write, truncating) and FILE_WRITE, as ifuse writes a file. */
  writeFile(path: string, content: Readable, app?: string): Promise<void> {
    return this.inDocuments(app, async (afc) => {
      const stream = await afc.createWriteStream(path, { autoDestroy: true }).catch((error: Error) => {
        throw missing(error, `No folder ${posix.dirname(path)} in ${app}'s container.`);
      });
      const closed = once(stream, 'close');
      await pipeline(content, stream);
      // The file handle is closed on the phone once the stream closes; the connection only after that.
      await closed;
    });
  }

  /** AFC's RemovePathAndContents: a file, or a folder with what is in it. */
  deleteFile(path: string, app?: string): Promise<void> {
    return this.inDocuments(app, async (afc) => {
      await afc.getFileInfo(path).catch((error: Error) => {
        throw missing(error, `No file or folder ${path} in ${app}'s container.`);
      });
      await afc.deleteDirectory(path);
    });
  }

  /**
   * diagnostics_relay's Restart (usbmux.ts): the phone leaves usbmuxd's bus and attaches again once it has booted,
   * which the fleet's Listen stream reports; WDA is started again on that attach as on any other.
   */
  async reboot(): Promise<void> {
    await restartDevice(this.address, this.udid);
  }

  async screenshot(): Promise<Buffer> {
    return Buffer.from(await this.wda.request<string>('GET', '/screenshot'), 'base64');
  }

  async elements(): Promise<UiElement[]> {
    const [source, scale] = await Promise.all([this.wda.request<string>('GET', '/source'), this.scale()]);
    return parseWdaSource(source, scale);
  }

  async act(action: DeviceAction, signal?: AbortSignal): Promise<ActionResult> {
    const wda = this.wda;
    switch (action.type) {
      case 'tap': {
        const [x, y] = await this.points(action.x, action.y);
        await wda.command('POST', '/actions', { actions: pointer([{ x: x!, y: y!, ms: 0 }], 50) }, signal);
        break;
      }
      case 'doubleTap': {
        // Two touches in one W3C action sequence, as Appium's XCUITest driver sends them: two requests would space
        // them past the double-tap interval.
        const [x, y] = await this.points(action.x, action.y);
        const touch = pointer([{ x: x!, y: y!, ms: 0 }], 50)[0]!;
        const [move, down, hold, up] = touch.actions;
        await wda.command('POST', '/actions', { actions: [{ ...touch, actions: [move, down, hold, up, { type: 'pause', duration: 100 }, down, hold, up] }] }, signal);
        break;
      }
      case 'longPress': {
        const [x, y] = await this.points(action.x, action.y);
        await wda.command('POST', '/actions', { actions: pointer([{ x: x!, y: y!, ms: 0 }], action.durationMs ?? 800) }, signal);
        break;
      }
      case 'swipe': {
        const [x1, y1, x2, y2] = await this.points(action.fromX, action.fromY, action.toX, action.toY);
        const points = [{ x: x1!, y: y1!, ms: 0 }, { x: x2!, y: y2!, ms: action.durationMs ?? 300 }];
        await wda.command('POST', '/actions', { actions: pointer(points, 50) }, signal);
        break;
      }
      case 'typeText':
        await wda.command('POST', '/wda/keys', { value: [...action.text] }, signal);
        break;
      case 'pressButton':
        switch (action.button) {
          case 'HOME':
            await wda.request('POST', '/wda/homescreen', undefined, signal);
            break;
          case 'VOLUME_UP':
          case 'VOLUME_DOWN':
            await wda.command('POST', '/wda/pressButton', { name: action.button === 'VOLUME_UP' ? 'volumeUp' : 'volumeDown' }, signal);
            break;
          case 'POWER':
            // The side button: locks an unlocked phone, wakes (unlocks) a locked one.
            await wda.command('POST', (await wda.command<boolean>('GET', '/wda/locked')) ? '/wda/unlock' : '/wda/lock', undefined, signal);
            break;
          case 'ENTER':
            await wda.command('POST', '/wda/keys', { value: ['\n'] }, signal);
            break;
          case 'BACKSPACE':
            // XCUIKeyboardKeyDelete: the keyboard's delete key, in the focused field.
            await wda.command('POST', '/wda/keys', { value: ['\b'] }, signal);
            break;
          default:
            throw invalid('unsupported_button', `An iPhone has no ${action.button} button: use HOME, VOLUME_UP, VOLUME_DOWN, POWER, ENTER or BACKSPACE.`);
        }
        break;
      case 'launchApp':
        await wda.command('POST', '/wda/apps/launch', { bundleId: action.packageName }, signal);
        break;
      case 'terminateApp':
        await wda.command('POST', '/wda/apps/terminate', { bundleId: action.packageName }, signal);
        break;
      case 'uninstallApp': {
        const proxy = await installationProxy(this.address, this.udid);
        try {
          const apps = await proxy.listApplications({ applicationType: 'Any', returnAttributes: ['CFBundleIdentifier', 'ApplicationType'] });
          if (!(action.packageName in apps)) throw new Error(`${action.packageName} is not installed`);
          if (apps[action.packageName]?.ApplicationType === 'System') {
            throw invalid('system_app', `${action.packageName} is one of iOS's own apps: the iPhone does not let it be uninstalled.`);
          }
          await proxy.uninstallApplication(action.packageName).catch((error: Error) => {
            throw installationProblem(error, action.packageName);
          });
        } finally {
          proxy.close();
        }
        break;
      }
      case 'clearAppData':
        // iOS keeps an app's data with the app: only uninstalling it (and installing again) clears it.
        throw invalid('unsupported_action', 'An iPhone cannot clear an app\'s data without removing the app: uninstall it and install it again.');
      case 'foregroundApp': {
        // SpringBoard in front is the home screen: no app, as on Android's launcher.
        const { bundleId } = await wda.command<{ bundleId?: string }>('GET', '/wda/activeAppInfo', undefined, signal);
        return { ok: true, packageName: !bundleId || bundleId === 'com.apple.springboard' ? '' : bundleId };
      }
      case 'listApps': {
        const proxy = await installationProxy(this.address, this.udid);
        try {
          const apps = await proxy.listApplications({ applicationType: 'Any', returnAttributes: ['CFBundleIdentifier'] });
          return { ok: true, apps: Object.keys(apps).filter((id) => !id.startsWith(WDA_RUNNER)).sort() };
        } finally {
          proxy.close();
        }
      }
      case 'openUrl':
        await wda.command('POST', '/url', { url: action.url }, signal);
        break;
      case 'setOrientation':
        await wda.command('POST', '/orientation', { orientation: action.orientation.toUpperCase() }, signal);
        break;
      case 'getOrientation': {
        // The phone page's Rotate asks first, then turns the other way.
        const orientation = await wda.command<string>('GET', '/orientation', undefined, signal);
        return { ok: true, orientation: /^LANDSCAPE/i.test(orientation) ? 'landscape' : 'portrait' };
      }
      case 'screenSize': {
        const [size, scale] = await Promise.all([wda.command<{ width: number; height: number }>('GET', '/window/size', undefined, signal), this.scale()]);
        return { ok: true, width: Math.round(size.width * scale), height: Math.round(size.height * scale) };
      }
      default: {
        // Every action of the vocabulary is handled above: a new one fails to compile here rather than answer ok.
        const unhandled: never = action;
        throw invalid('unsupported_action', `An iPhone cannot ${(unhandled as DeviceAction).type} yet.`);
      }
    }
    return { ok: true };
  }

  /** WDA's MJPEG frames encoded to an H.264 MP4 by ffmpeg; it stops by itself after three minutes, as Android's screenrecord does. */
  startRecording(): Promise<ScreenRecording> {
    return recordScreen(this.udid, (signal) => this.liveFrames(signal), 180);
  }

  /** WDA's MJPEG stream (port 9100): JPEG frames as the phone encodes them, split on their multipart boundaries. */
  async *liveFrames(signal: AbortSignal): AsyncIterable<LiveFrame> {
    const socket = await (this.route ? this.route(WDA_MJPEG_PORT) : tunnel(this.address, this.udid, WDA_MJPEG_PORT));
    const stop = () => socket.destroy();
    signal.addEventListener('abort', stop, { once: true });
    try {
      socket.write('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n');
      let pending = Buffer.alloc(0);
      let headersDone = false;
      for await (const chunk of socket) {
        pending = Buffer.concat([pending, chunk as Buffer]);
        if (!headersDone) {
          const end = pending.indexOf('\r\n\r\n');
          if (end < 0) continue;
          headersDone = true;
          pending = pending.subarray(end + 4);
        }
        for (;;) {
          // Each part ends in a blank line before the next boundary.
          let skip = 0;
          while (pending[skip] === 0x0d || pending[skip] === 0x0a) skip++;
          pending = pending.subarray(skip);
          const head = pending.indexOf('\r\n\r\n');
          if (head < 0) break;
          const length = /content-length:\s*(\d+)/i.exec(pending.subarray(0, head).toString('latin1'));
          if (!length) throw new Error('The MJPEG stream has a part without Content-Length.');
          const start = head + 4;
          const size = Number(length[1]);
          if (pending.length < start + size) break;
          const data = Buffer.from(pending.subarray(start, start + size));
          pending = pending.subarray(start + size);
          // WDA's frames are screenshots' pixels, the coordinates the API takes: the frame is the screen.
          const frame = jpegSize(data) ?? { width: 0, height: 0 };
          yield { data, format: 'jpeg', ...frame, source: 'mjpeg', screen: frame };
        }
      }
    } finally {
      signal.removeEventListener('abort', stop);
      socket.destroy();
    }
  }

  /** Lines of the phone's syslog (com.apple.syslog_relay) until the signal aborts. */
  async *logs(signal: AbortSignal): AsyncIterable<LogLine> {
    const syslog = await syslogService(this.address, this.udid);
    const lines: string[] = [];
    let wake: (() => void) | undefined;
    syslog.start((line) => {
      lines.push(line);
      wake?.();
    });
    const stop = () => wake?.();
    signal.addEventListener('abort', stop, { once: true });
    try {
      while (!signal.aborted) {
        if (!lines.length) await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        while (lines.length) {
          const line = parseSyslogLine(lines.shift()!);
          if (line) yield line;
        }
      }
    } finally {
      signal.removeEventListener('abort', stop);
      syslog.close();
    }
  }
}

const SYSLOG_LINE = /^(\w{3} +\d+ \d\d:\d\d:\d\d) \S+ ([^\s[(]+)(?:\([^)]*\))?\[(\d+)\] <(\w+)>: ?(.*)$/s;
const SYSLOG_LEVELS: Record<string, LogLine['level']> = {
  Debug: 'debug', Info: 'info', Notice: 'info', Warning: 'warn', Error: 'error', Critical: 'fatal', Alert: 'fatal', Emergency: 'fatal', Fault: 'fatal',
};

/**
 * One syslog_relay line ("Nov 23 13:00:00 iPhone SpringBoard(FrontBoard)[58] <Notice>: text") as a log line; the
 * phone's clock gives no year, so it is this year's. A line of another shape is kept whole as the message.
 */
export function parseSyslogLine(raw: string, now = new Date()): LogLine | undefined {
  const text = raw.replace(/\0/g, '').trimEnd();
  if (text === '') return undefined;
  const m = SYSLOG_LINE.exec(text);
  if (!m) return { time: now.toISOString(), level: 'info', tag: '', pid: 0, message: text };
  const time = new Date(`${m[1]} ${now.getFullYear()}`);
  return {
    time: Number.isNaN(time.getTime()) ? now.toISOString() : time.toISOString(),
    level: SYSLOG_LEVELS[m[4]!] ?? 'info',
    tag: m[2]!,
    pid: Number(m[3]),
    message: m[5]!,
  };
}

/** AFC's OBJECT_NOT_FOUND (appium-ios-device words it "Unexpected response OBJECT_NOT_FOUND") as FileMissing. */
function missing(error: Error, message: string): Error {
  return /OBJECT_NOT_FOUND/.test(error.message) ? new FileMissing(message) : error;
}
