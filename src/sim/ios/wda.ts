import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { encodePng } from '../png.js';
import { APP_STATE, type AxNode, type Orientation, type Springboard } from './springboard.js';
import { invalidArgument, invalidElementState, unknownError, WdaError } from './wda/errors.js';
import { findElements } from './wda/find.js';
import { parsePredicate } from './wda/predicate.js';
import { attributeGetter, descendants, jsonTree, snapshot, toXml, wd, type Snap } from './wda/snapshot.js';

export const WDA_PORT = 8100;
export const MJPEG_PORT = 9100;
export const WDA_BUNDLE_ID = 'com.facebook.WebDriverAgentRunner.xctrunner';

const SPRINGBOARD = 'com.apple.springboard';
const W3C_ELEMENT = 'element-6066-11e4-a52e-4f735466cecf';
/** FBMinimumAppSwitchWait: fb_deactivateWithDuration stays on the home screen at least this long. */
const MIN_APP_SWITCH_WAIT_S = 3;
/** How many scrolls fb_scrollToVisible tries before it gives up on a child that does not appear. */
const MAX_SCROLL_COUNT = 25;
const DIRECTIONS = ['up', 'down', 'left', 'right'] as const;
type Direction = (typeof DIRECTIONS)[number];
/** UIDeviceBatteryState: charging on the lab's cable, full once it reads 100 %. */
const BATTERY_STATE = { CHARGING: 2, FULL: 3 } as const;

interface PointerAction {
  type: string;
  duration?: number;
  x?: number;
  y?: number;
  origin?: unknown;
  button?: number;
}

/** WDA's settings (appium/settings): those that shape its MJPEG stream, and the rest with FBConfiguration's defaults. */
export interface WdaSettings {
  mjpegServerFramerate: number;
  mjpegServerScreenshotQuality: number;
  mjpegScalingFactor: number;
  shouldUseCompactResponses: boolean;
  elementResponseAttributes: string;
  [name: string]: unknown;
}

/** FBConfiguration's resetSessionSettings, as a new session finds them. */
function defaultSettings(): WdaSettings {
  return {
    mjpegServerFramerate: 10,
    mjpegServerScreenshotQuality: 25,
    mjpegScalingFactor: 100,
    mjpegFixOrientation: false,
    shouldUseCompactResponses: true,
    elementResponseAttributes: 'type,label',
    screenshotQuality: 3,
    keyboardAutocorrection: false,
    keyboardPrediction: false,
    snapshotMaxDepth: 50,
    snapshotMaxChildren: 2147483647,
    useFirstMatch: false,
    waitForIdleTimeout: 10,
    animationCoolOffTimeout: 2,
    accessibilityDeadline: 0,
    boundElementsByIndex: false,
    reduceMotion: false,
    defaultActiveApplication: 'auto',
    activeAppDetectionPoint: '64.00,64.00',
    acceptAlertButtonSelector: '',
    dismissAlertButtonSelector: '',
    autoClickAlertSelector: '',
    defaultAlertAction: '',
    maxTypingFrequency: 60,
    respectSystemAlerts: false,
    useClearTextShortcut: true,
    includeHittableInPageSource: false,
    includeNativeFrameInPageSource: false,
    includeNativeAccessibilityElementInPageSource: false,
    includeMinMaxValueInPageSource: false,
    includeCustomActionsInPageSource: false,
    enforceCustomSnapshots: false,
    limitXPathContextScope: true,
    screenshotOrientation: 'auto',
  };
}

/** A WDA session: the app it launched (terminated when it ends) and the elements it has handed out (FBElementCache). */
interface WdaSession {
  id: string;
  bundleId: string | undefined;
  terminateApp: boolean;
  elements: Set<string>;
}

/**
 * WebDriverAgent's HTTP API on port 8100 (the W3C WebDriver subset WDA implements, plus its /wda extensions), and its
 * MJPEG server on 9100. Both are reached only through usbmuxd Connect, as on a real phone where WDA runs as an
 * XCUITest runner: the servers never listen on a host port; usbmuxd hands each tunnel's socket to them.
 */
export class WebDriverAgent {
  readonly http: Server;
  readonly settings: WdaSettings = defaultSettings();
  private session: WdaSession | undefined;
  /** The screen's snapshot per accessibility tree (the board builds a new tree when the screen changes). */
  private readonly snapshots = new WeakMap<object, Snap>();
  /** Every request served, newest last: what a test inspects to see which commands the engine sent. */
  readonly requests: string[] = [];
  private readonly streams = new Set<Socket>();
  /** MJPEG parts written, to every client: a test compares them with the frames a viewer got. */
  mjpegFramesSent = 0;
  private readonly connections = new Set<Socket>();
  /** UIDevice's identifierForVendor: WDA's, the same for the phone's life. */
  private readonly vendorId = randomUUID().toUpperCase();

  constructor(
    private readonly board: Springboard,
    private readonly device: { udid: string; version: string },
  ) {
    this.http = createServer((req, res) => void this.route(req, res));
    this.http.keepAliveTimeout = 60_000;
  }

  get sessionId(): string | undefined {
    return this.session?.id;
  }

  /** Forgets the session, as a WDA that died and started again has none. */
  set sessionId(id: undefined) {
    this.session = id;
  }

  accept(socket: Socket): void {
    // Tracked here: the server never listens, and Node's closeAllConnections knows only a listening server's sockets.
    this.connections.add(socket);
    socket.once('close', () => this.connections.delete(socket));
    this.http.emit('connection', socket);
  }

  acceptMjpeg(socket: Socket): void {
    this.stream(socket);
  }

  stop(): void {
    for (const res of this.streams) res.destroy();
    for (const socket of this.connections) socket.destroy();
  }

  /**
   * WDA's MJPEG server is a plain socket server, not an HTTP framework: it reads the request, answers with HTTP/1.0
   * headers and then writes multipart parts for as long as the client stays, at mjpegServerFramerate.
   */
  private stream(socket: Socket): void {
    const boundary = '--BoundaryString';
    socket.on('error', () => undefined);
    let request = '';
    let timer: NodeJS.Timeout | undefined;
    const send = async () => {
      if (socket.destroyed) return;
      const frame = await this.board.jpeg(this.settings.mjpegServerScreenshotQuality);
      if (socket.destroyed) return;
      this.mjpegFramesSent++;
      const ok = socket.write(Buffer.concat([Buffer.from(`${boundary}\r\nContent-type: image/jpeg\r\nContent-Length: ${frame.length}\r\n\r\n`), frame, Buffer.from('\r\n\r\n')]));
      const next = () => (timer = setTimeout(sendSoon, 1000 / Math.max(1, this.settings.mjpegServerFramerate)));
      // A slow viewer gets fewer frames, never a backlog: the next frame waits for the socket to drain.
      if (ok) next();
      else socket.once('drain', next);
    };
    // A frame that cannot be encoded ends the stream, as WDA's MJPEG server drops a client on an error.
    const sendSoon = () => void send().catch(() => socket.destroy());
    const onData = (chunk: Buffer) => {
      request += chunk.toString('latin1');
      if (!request.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      socket.write(
        'HTTP/1.0 200 OK\r\nServer: WDA MJPEG Server\r\nConnection: close\r\nMax-Age: 0\r\nExpires: 0\r\n' +
          `Cache-Control: no-cache, private\r\nPragma: no-cache\r\nContent-Type: multipart/x-mixed-replace; boundary=${boundary}\r\n\r\n`,
      );
      this.streams.add(socket);
      sendSoon();
    };
    socket.on('data', onData);
    socket.on('close', () => {
      clearTimeout(timer);
      this.streams.delete(socket);
    });
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://localhost');
    this.requests.push(`${req.method} ${url.pathname}`);
    let body: Record<string, unknown> = {};
    const reply = (status: number, value: unknown) => {
      const text = JSON.stringify({ value, sessionId: this.sessionId ?? null });
      res.writeHead(status, { 'Content-Type': 'application/json;charset=UTF-8', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
    };
    try {
      if (chunks.length) {
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
        } catch {
          throw new WdaError(400, 'invalid argument', 'The request body is not JSON');
        }
      }
      reply(200, (await this.handle(req.method ?? 'GET', url.pathname, body, url.searchParams)) ?? null);
    } catch (error) {
      if (error instanceof WdaError) return reply(error.status, { error: error.error, message: error.message, traceback: '' });
      reply(500, { error: 'unknown error', message: (error as Error).message, traceback: '' });
    }
  }

  private async handle(method: string, path: string, body: Record<string, unknown>, query: URLSearchParams): Promise<unknown> {
    const b = this.board;
    // Session-scoped routes: /session/<id>/<rest>; WDA also serves many of them without the session prefix.
    let rest = path;
    const m = /^\/session\/([^/]+)(\/.*)?$/.exec(path);
    if (m) {
      if (m[1] !== this.sessionId) throw new WdaError(404, 'invalid session id', `Session does not exist: ${m[1]}`);
      rest = m[2] ?? '';
      if (!rest && method === 'DELETE') {
        this.deleteSession();
        return null;
      }
      if (!rest && method === 'GET') return { sessionId: this.sessionId, capabilities: this.capabilities() };
      // Element commands exist only within a session (FBRoute without .withoutSession).
      const element = this.elementCommand(method, rest, body);
      if (element) return element.value;
    }
    const route = `${method} ${rest}`;
    switch (route) {
      case 'GET /status':
        return {
          ready: true,
          message: 'WebDriverAgent is ready to accept commands',
          state: 'success',
          os: { name: 'iOS', version: this.device.version, sdkVersion: this.device.version, testmanagerdVersion: 28 },
          ios: { ip: '169.254.1.1' },
          device: 'iphone',
          build: { time: 'Jan 1 2025 00:00:00', productBundleIdentifier: 'com.facebook.WebDriverAgentRunner' },
        };
      case 'POST /session':
        return this.createSession(body);
      case 'GET /source':
        return this.source(query);
      case 'GET /screenshot':
        return b.png().toString('base64');
      case 'GET /window/size':
        return b.window();
      case 'GET /window/rect':
        return { x: 0, y: 0, ...b.window() };
      case 'GET /wda/screen':
        return { statusBarSize: { width: b.window().width, height: 20 }, scale: b.scale, screenSize: b.window() };
      case 'GET /orientation':
        return b.orientation;
      case 'POST /orientation': {
        const o = String(body.orientation ?? '').toUpperCase();
        if (o !== 'PORTRAIT' && o !== 'LANDSCAPE') throw new WdaError(400, 'invalid argument', `Unsupported orientation: ${o}`);
        b.setOrientation(o as Orientation);
        return null;
      }
      case 'POST /url': {
        const url = String(body.url ?? '');
        try {
          b.openUrl(url);
        } catch (error) {
          throw new WdaError(400, 'invalid argument', (error as Error).message);
        }
        return null;
      }
      case 'POST /actions':
        this.perform(body.actions);
        return null;
      case 'POST /wda/tap':
        b.tap(Number(body.x), Number(body.y));
        return null;
      case 'POST /wda/touchAndHold':
        b.longPress(Number(body.x), Number(body.y), Number(body.duration ?? 1) * 1000);
        return null;
      case 'POST /wda/dragfromtoforduration':
        b.gesture(Number(body.fromX), Number(body.fromY), Number(body.toX), Number(body.toY), Number(body.duration ?? 0.5) * 1000);
        return null;
      case 'POST /wda/keys': {
        const value = Array.isArray(body.value) ? body.value.map(String).join('') : String(body.value ?? '');
        this.type(value);
        return null;
      }
      case 'POST /wda/pressButton':
        try {
          b.pressButton(String(body.name ?? ''));
        } catch (error) {
          throw new WdaError(400, 'invalid argument', (error as Error).message);
        }
        return null;
      case 'POST /wda/homescreen':
        b.home();
        return null;
      case 'POST /wda/lock':
        b.lock();
        return null;
      case 'POST /wda/unlock':
        b.unlock();
        return null;
      case 'GET /wda/locked':
        return b.locked;
      case 'POST /wda/apps/launch':
      case 'POST /wda/apps/activate':
        try {
          b.launch(String(body.bundleId ?? ''));
        } catch (error) {
          throw new WdaError(500, 'unknown error', (error as Error).message);
        }
        return null;
      // FBCustomCommands: the content travels base64-encoded, as plaintext unless contentType says url or image.
      case 'POST /wda/setPasteboard': {
        const type = body.contentType ?? 'plaintext';
        if (type !== 'plaintext' && type !== 'url' && type !== 'image') throw invalidArgument(`Unsupported content type: ${String(type)}`);
        if (typeof body.content !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(body.content)) throw invalidArgument('Cannot decode the pasteboard content from base64');
        b.pasteboard = Buffer.from(body.content, 'base64').toString('utf8');
        return null;
      }
      case 'POST /wda/getPasteboard':
        return Buffer.from(b.pasteboard, 'utf8').toString('base64');
      case 'POST /wda/apps/terminate':
        return b.terminate(String(body.bundleId ?? ''));
      case 'POST /wda/apps/state':
        return b.state(String(body.bundleId ?? ''));
      case 'GET /wda/apps/list':
        // XCUIApplication.fb_activeAppsInfo: the apps on screen, the foreground one (or SpringBoard).
        return [{ pid: this.pid(b.foreground ?? SPRINGBOARD), bundleId: b.foreground ?? SPRINGBOARD }];
      case 'GET /wda/activeAppInfo': {
        const id = b.foreground ?? SPRINGBOARD;
        return { bundleId: id, name: b.foreground ? b.apps.get(id)?.name ?? '' : '', pid: this.pid(id), processArguments: {} };
      }
      // FBCustomCommands' dismiss: nothing to do without a keyboard; else a key of the keyboard named in keyNames
      // (the driver adds "done") is tapped, and an error says so when none of them hid it.
      case 'POST /wda/keyboard/dismiss':
        return this.dismissKeyboard(body.keyNames);
      // fb_deactivateWithDuration: the home screen for the duration (at least FBMinimumAppSwitchWait), then the app again.
      case 'POST /wda/deactivateApp': {
        const duration = body.duration === undefined ? 3 : Number(body.duration);
        if (!Number.isFinite(duration)) throw invalidArgument(`The duration ${String(body.duration)} is not a number`);
        const app = b.foreground;
        b.home();
        await delay(Math.max(duration, MIN_APP_SWITCH_WAIT_S) * 1000);
        if (app && b.apps.has(app)) b.launch(app);
        return null;
      }
      case 'GET /wda/batteryInfo': {
        // UIDevice's batteryLevel (0 to 1) and batteryState.
        const level = this.board.device.battery();
        return { level: level / 100, state: level >= 100 ? BATTERY_STATE.FULL : BATTERY_STATE.CHARGING };
      }
      case 'GET /wda/device/info':
        return {
          currentLocale: 'en_US',
          timeZone: 'UTC',
          name: this.board.device.name(),
          model: 'iPhone',
          uuid: this.vendorId,
          userInterfaceIdiom: 0,
          userInterfaceStyle: 'light',
          isSimulator: false,
          thermalState: 0,
        };
      case 'POST /wda/scroll':
        return this.scroll(this.root(), body);
      case 'POST /wda/swipe':
        return this.swipe(this.root(), body);
      case 'GET /appium/settings':
        return { ...this.settings };
      case 'POST /appium/settings': {
        if (body.settings !== undefined && (typeof body.settings !== 'object' || body.settings === null || Array.isArray(body.settings))) {
          throw invalidArgument('settings must be a dictionary');
        }
        this.applySettings((body.settings ?? {}) as Record<string, unknown>);
        return { ...this.settings };
      }
    }
    throw new WdaError(404, 'unknown command', `Unhandled endpoint: ${path} -- http://localhost:${WDA_PORT}/ with parameters {\n    wildcards =     (\n        "${path}"\n    );\n}`);
  }

  /** FBSessionCommands' handleCreateSession: capabilities from alwaysMatch and the first firstMatch, the app launched. */
  private createSession(body: Record<string, unknown>) {
    const requested = body.capabilities as { alwaysMatch?: Record<string, unknown>; firstMatch?: Array<Record<string, unknown>> } | undefined;
    if (!requested || typeof requested !== 'object') throw new WdaError(500, 'session not created', "'capabilities' is mandatory to create a new session");
    const caps = { ...(requested.alwaysMatch ?? {}), ...(requested.firstMatch?.[0] ?? {}) };
    this.resetSessionSettings();
    this.applySettings(Object.fromEntries(['shouldUseCompactResponses', 'elementResponseAttributes', 'maxTypingFrequency'].map((key) => [key, caps[key]])));
    const bundleId = typeof caps.bundleId === 'string' ? caps.bundleId : undefined;
    if (bundleId) {
      try {
        // forceAppLaunch (the default) starts a running app afresh; without it, the running app comes to the front.
        if (caps.forceAppLaunch !== false && this.board.state(bundleId) !== APP_STATE.NOT_RUNNING) this.board.terminate(bundleId);
        this.board.launch(bundleId);
      } catch (error) {
        throw new WdaError(500, 'session not created', (error as Error).message);
      }
    }
    this.session = { id: randomUUID().toUpperCase(), bundleId, terminateApp: caps.shouldTerminateApp !== false, elements: new Set() };
    return { sessionId: this.session.id, capabilities: this.capabilities() };
  }

  /** FBSession kill: the app the session launched is terminated when it ends (shouldTerminateApp). */
  private deleteSession(): void {
    const session = this.session;
    this.session = undefined;
    if (session?.bundleId && session.terminateApp && this.board.state(session.bundleId) !== APP_STATE.NOT_RUNNING) this.board.terminate(session.bundleId);
  }

  private capabilities() {
    return { device: 'iphone', sdkVersion: this.device.version };
  }

  private resetSessionSettings(): void {
    const { mjpegServerFramerate, mjpegServerScreenshotQuality, mjpegScalingFactor } = this.settings;
    Object.assign(this.settings, defaultSettings(), { mjpegServerFramerate, mjpegServerScreenshotQuality, mjpegScalingFactor });
  }

  /** FBSettingsHandler: known settings are applied (MJPEG ones clamped as its setters do); unknown ones ignored. */
  private applySettings(settings: Record<string, unknown>): void {
    for (const [key, value] of Object.entries(settings)) {
      if (!Object.hasOwn(this.settings, key) || value === null || value === undefined) continue;
      if (key === 'mjpegServerFramerate' && typeof value === 'number') this.settings.mjpegServerFramerate = Math.min(60, Math.max(1, value));
      else if (key === 'mjpegServerScreenshotQuality' && typeof value === 'number') this.settings.mjpegServerScreenshotQuality = Math.min(100, Math.max(1, value));
      else if (typeof value === typeof this.settings[key]) this.settings[key] = value;
    }
  }

  /** GET /source: the active application as XML (with Appium's scope element), JSON (fb_tree) or a description. */
  private source(query: URLSearchParams): unknown {
    const format = (query.get('format') ?? 'xml').toLowerCase();
    const root = this.root();
    if (format === 'xml') {
      const bundleId = this.board.foreground ?? SPRINGBOARD;
      return toXml(root, {
        scope: query.get('scope') ?? undefined,
        excluded: query.get('excluded_attributes')?.split(','),
        app: { pid: this.pid(bundleId), bundleId },
      });
    }
    if (format === 'json') return jsonTree(root, new Set(query.get('excluded_attributes')?.split(',') ?? []));
    if (format === 'description') return descendants(root).map((s) => `${' '.repeat(2 * (s.path.split(',').length - 1))}${s.node.type}, {{${s.node.x}, ${s.node.y}}, {${s.node.width}, ${s.node.height}}}${wd.name(s) ? `, identifier: '${wd.name(s)}'` : ''}`).join('\n');
    throw invalidArgument(`Unknown source format '${format}'. Only (xml, json, description) source formats are supported.`);
  }

  /** The snapshot of the active application, one per screen state. */
  private root(): Snap {
    const tree = this.board.tree();
    let snap = this.snapshots.get(tree);
    if (!snap) {
      snap = snapshot(tree);
      this.snapshots.set(tree, snap);
    }
    return snap;
  }

  /** An element of the session's cache on the current screen; gone from the screen, it is stale. */
  private element(uuid: string): Snap {
    const stale = () => new WdaError(404, 'stale element reference', `The element identified by "${uuid}" is either not present or it has expired from the internal cache. Try to find it again`);
    if (!this.session?.elements.has(uuid)) throw stale();
    const found = descendants(this.root()).find((s) => wd.uid(s) === uuid);
    if (!found) throw stale();
    return found;
  }

  /** FBDictionaryResponseWithElement: the element reference in both keys, with more fields unless responses are compact. */
  private reference(s: Snap): Record<string, unknown> {
    const uid = wd.uid(s);
    this.session?.elements.add(uid);
    const ref: Record<string, unknown> = { ELEMENT: uid, [W3C_ELEMENT]: uid };
    if (this.settings.shouldUseCompactResponses) return ref;
    for (const field of String(this.settings.elementResponseAttributes).split(',').map((f) => f.trim()).filter(Boolean)) {
      if (field === 'name' || field === 'type') ref[field] = wd.type(s);
      else if (field === 'text') ref[field] = wd.value(s) ?? wd.label(s) ?? null;
      else {
        const name = field.startsWith('attribute/') ? field.slice('attribute/'.length) : field;
        try {
          ref[field] = attributeGetter(name)(s) ?? null;
        } catch {
          ref[field] = null;
        }
      }
    }
    return ref;
  }

  private find(root: Snap, body: Record<string, unknown>, many: boolean): unknown {
    const using = String(body.using ?? '');
    const value = String(body.value ?? '');
    const found = findElements(root, using, value, !many);
    if (many) return found.map((s) => this.reference(s));
    if (!found.length) throw new WdaError(404, 'no such element', `unable to find an element using '${using}', value '${value}'`);
    return this.reference(found[0]!);
  }

  /** The routes of FBFindElementCommands and FBElementCommands that take an element (or find one); undefined for others. */
  private elementCommand(method: string, rest: string, body: Record<string, unknown>): { value: unknown } | undefined {
    if (method === 'POST' && (rest === '/element' || rest === '/elements')) return { value: this.find(this.root(), body, rest === '/elements') };
    if (method === 'GET' && rest === '/element/active') {
      const focused = descendants(this.root()).find((s) => s.node.focused);
      if (!focused) throw new WdaError(404, 'no such element', 'unable to find an element using \'(null)\', value \'(null)\'');
      return { value: this.reference(focused) };
    }
    const e = /^\/(?:wda\/)?element\/([^/]+)\/(.+)$/.exec(rest);
    if (!e) return undefined;
    const [, uuid, command] = e as unknown as [string, string, string];
    const wdaPrefixed = rest.startsWith('/wda/');
    const route = `${method} ${wdaPrefixed ? 'wda/' : ''}${command}`;
    const center = (s: Snap) => ({ x: s.node.x + s.node.width / 2, y: s.node.y + s.node.height / 2 });
    switch (route) {
      case 'POST element':
      case 'POST elements':
        return { value: this.find(this.element(uuid), body, command === 'elements') };
      case 'GET enabled':
        return { value: wd.enabled(this.element(uuid)) };
      case 'GET rect':
        return { value: wd.rect(this.element(uuid)) };
      case 'GET text': {
        const s = this.element(uuid);
        return { value: wd.value(s) ?? wd.label(s) ?? '' };
      }
      case 'GET displayed':
        return { value: wd.visible(this.element(uuid)) };
      case 'GET selected':
        return { value: wd.selected(this.element(uuid)) };
      case 'GET name':
        return { value: wd.type(this.element(uuid)) };
      case 'GET attribute/focused':
        return { value: wd.focused(this.element(uuid)) };
      case 'GET screenshot':
        return { value: this.elementScreenshot(this.element(uuid).node) };
      case 'POST wda/scroll':
        return { value: this.scroll(this.element(uuid), body) };
      case 'POST wda/swipe':
        return { value: this.swipe(this.element(uuid), body) };
      case 'GET wda/accessible':
        return { value: wd.accessible(this.element(uuid)) };
      case 'GET wda/accessibilityContainer':
        return { value: wd.accessibilityContainer(this.element(uuid)) };
      case 'POST click': {
        // XCUIElement tap: a touch at the element's hit point, whatever the screen has there.
        const { x, y } = center(this.element(uuid));
        this.board.tap(x, y);
        return { value: null };
      }
      case 'POST wda/tap':
      case 'POST wda/touchAndHold':
      case 'POST wda/doubleTap': {
        const s = this.element(uuid);
        const hasPoint = body.x !== undefined || body.y !== undefined;
        if (hasPoint && (body.x === undefined || body.y === undefined)) throw invalidArgument('Both x and y coordinates must be provided');
        const { x, y } = hasPoint ? { x: s.node.x + Number(body.x), y: s.node.y + Number(body.y) } : center(s);
        if (command === 'touchAndHold') this.board.longPress(x, y, Number(body.duration ?? 1) * 1000);
        else {
          this.board.tap(x, y);
          if (command === 'doubleTap') this.board.tap(x, y);
        }
        return { value: null };
      }
      case 'POST value': {
        const s = this.element(uuid);
        const value = body.value ?? body.text;
        if (value === undefined || value === null) throw invalidArgument("Neither 'value' nor 'text' parameter is provided");
        const text = Array.isArray(value) ? value.map(String).join('') : String(value);
        // fb_typeText: an element without keyboard focus is tapped first.
        if (!s.node.focused) this.board.tap(center(s).x, center(s).y);
        this.type(text);
        return { value: null };
      }
      case 'POST clear': {
        let s = this.element(uuid);
        if (!s.node.focused) {
          this.board.tap(center(s).x, center(s).y);
          s = descendants(this.root()).find((d) => d.path === s.path) ?? s;
        }
        if (!s.node.focused) throw invalidElementState(`Failed to clear the text of ${s.node.type}: it has no keyboard focus`);
        this.type('\b'.repeat([...(s.node.value ?? '')].length));
        return { value: null };
      }
    }
    if (command.startsWith('attribute/') && method === 'GET') {
      const value = attributeGetter(decodeURIComponent(command.slice('attribute/'.length)))(this.element(uuid));
      return { value: value ?? null };
    }
    return undefined;
  }

  /** XCUIElement's screenshot: the screen's pixels under the element's frame, as a PNG. */
  private elementScreenshot(n: AxNode): string {
    const canvas = this.board.canvas();
    const s = this.board.scale;
    const left = Math.max(0, Math.round(n.x * s));
    const top = Math.max(0, Math.round(n.y * s));
    const width = Math.min(canvas.width, Math.round((n.x + n.width) * s)) - left;
    const height = Math.min(canvas.height, Math.round((n.y + n.height) * s)) - top;
    if (width <= 0 || height <= 0) throw unknownError(`Cannot take a screenshot of ${n.type}: it is not on the screen`);
    return encodePng(canvas, { left, top, width, height }).toString('base64');
  }

  private dismissKeyboard(keyNames: unknown): null {
    const keyboard = () => descendants(this.root()).find((s) => s.node.type === 'XCUIElementTypeKeyboard');
    const shown = keyboard();
    if (!shown) return null;
    const names = Array.isArray(keyNames) ? keyNames.map(String) : [];
    // The keys are the children of the keyboard's view that holds them.
    const keys = shown.children.flatMap((view) => view.children).filter((k) => k.node.type === 'XCUIElementTypeKey' || k.node.type === 'XCUIElementTypeButton');
    for (const key of keys.filter((k) => names.includes(k.node.name ?? '') || names.includes(k.node.label ?? ''))) {
      this.board.tap(key.node.x + key.node.width / 2, key.node.y + key.node.height / 2);
      if (!keyboard()) return null;
    }
    throw invalidElementState('Did not know how to dismiss the keyboard. Try to dismiss it in the way supported by your application under test.');
  }

  private direction(body: Record<string, unknown>): Direction {
    const direction = String(body.direction ?? '').toLowerCase();
    if (!(DIRECTIONS as readonly string[]).includes(direction)) throw invalidArgument(`Unsupported direction ${String(body.direction)}`);
    return direction as Direction;
  }

  /**
   * A finger dragged across the element's frame for `fraction` of its size, so that the content moves `direction`
   * as a scroll names it (down: what is below comes into view), through the same gesture as a swipe of the screen.
   */
  private drag(n: AxNode, direction: Direction, fraction: number): void {
    const vertical = direction === 'up' || direction === 'down';
    const size = vertical ? n.height : n.width;
    const cx = n.x + n.width / 2;
    const cy = n.y + n.height / 2;
    // No drag is longer than most of the frame, so the finger stays inside it: a long scroll is several drags.
    let remaining = size * fraction;
    while (remaining >= 1) {
      const travel = Math.min(remaining, size * 0.8);
      const sign = direction === 'down' || direction === 'right' ? 1 : -1;
      const [from, to] = [(sign * travel) / 2, (-sign * travel) / 2];
      if (vertical) this.board.gesture(cx, cy + from, cx, cy + to, 300);
      else this.board.gesture(cx + from, cy, cx + to, cy, 300);
      remaining -= travel;
    }
  }

  /** FBElementCommands' scroll: by direction (a screenful, or `distance` of one), or until a named child is in view. */
  private scroll(target: Snap, body: Record<string, unknown>): null {
    const view = descendants(target).find((s) => s.node.onScroll)?.node ?? target.node;
    if (body.name !== undefined || body.predicateString !== undefined) {
      const wanted = body.name !== undefined ? (s: Snap) => wd.name(s) === String(body.name) : parsePredicate(String(body.predicateString));
      const inView = () => descendants(this.root()).some((s) => wanted(s) && wd.visible(s));
      const layout = () => descendants(this.root()).map((s) => `${wd.name(s) ?? ''}@${s.node.x},${s.node.y}`).join('|');
      for (let i = 0; !inView(); i++) {
        const before = layout();
        this.drag(view, 'down', 0.5);
        // Nothing moved: the end of the list, and what is wanted is not in it.
        if (i + 1 >= MAX_SCROLL_COUNT || layout() === before) throw invalidElementState('Failed to perform scroll with visible cell due to max scroll count reached');
      }
      return null;
    }
    if (body.toVisible !== undefined) return null;
    const distance = body.distance === undefined ? 1 : Number(body.distance);
    if (!Number.isFinite(distance) || distance < 0) throw invalidArgument(`Unsupported distance ${String(body.distance)}`);
    this.drag(view, this.direction(body), distance);
    return null;
  }

  /** XCUIElement swipeUp/Down/Left/Right: the finger moves that way across half the element. */
  private swipe(target: Snap, body: Record<string, unknown>): null {
    const direction = this.direction(body);
    const opposite: Record<Direction, Direction> = { up: 'down', down: 'up', left: 'right', right: 'left' };
    this.drag(target.node, opposite[direction], 0.5);
    return null;
  }

  private type(text: string): void {
    try {
      this.board.type(text);
    } catch (error) {
      throw invalidElementState((error as Error).message);
    }
  }

  /** A process id per app, stable for the phone's life, as the page source's application element shows it. */
  private pid(bundleId: string): number {
    if (bundleId === SPRINGBOARD) return 58;
    let h = 0;
    for (const ch of bundleId) h = (h * 31 + ch.charCodeAt(0)) % 2000;
    return 300 + h;
  }

  /** W3C pointer actions: each finger's down–move–pause–up sequence becomes a tap, a long press or a swipe. */
  private perform(actions: unknown): void {
    if (!Array.isArray(actions)) throw new WdaError(400, 'invalid argument', "'actions' must be an array");
    for (const source of actions as Array<{ type?: string; actions?: PointerAction[] }>) {
      if (source.type !== 'pointer') continue;
      let x = 0;
      let y = 0;
      let down: { x: number; y: number; at: number } | undefined;
      let elapsed = 0;
      for (const a of source.actions ?? []) {
        const duration = Number(a.duration ?? 0);
        if (a.type === 'pointerMove') {
          // The origin is the viewport, the pointer, or an element, whose centre the offset is from.
          const ref = a.origin && typeof a.origin === 'object' ? (a.origin as Record<string, unknown>)[W3C_ELEMENT] ?? (a.origin as Record<string, unknown>).ELEMENT : undefined;
          const base = ref !== undefined ? this.element(String(ref)).node : undefined;
          const [ox, oy] = base ? [base.x + base.width / 2, base.y + base.height / 2] : a.origin === 'pointer' ? [x, y] : [0, 0];
          x = ox + Number(a.x ?? 0);
          y = oy + Number(a.y ?? 0);
          elapsed += duration;
        } else if (a.type === 'pause') {
          elapsed += duration;
        } else if (a.type === 'pointerDown') {
          down = { x, y, at: elapsed };
        } else if (a.type === 'pointerUp') {
          if (!down) throw new WdaError(400, 'invalid argument', 'pointerUp without pointerDown');
          this.board.gesture(down.x, down.y, x, y, elapsed - down.at);
          down = undefined;
        } else {
          throw new WdaError(400, 'invalid argument', `Unknown action type: ${a.type}`);
        }
      }
    }
  }
}
