import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { encodePng } from '../../png.js';
import type { Device } from '../device.js';
import type { Screen } from '../screen.js';
import type { UiNode } from '../ui.js';
import { ActionsError, performActions } from './actions.js';
import { find, LocatorError, type Window } from './locators.js';
import { boundsString, flatten, nodeAt, sourceXml, type Located } from './source.js';

/**
 * AppiumServlet's routes, as far as the simulated phone has them, with the server's handlers' answers and errors.
 * Everything reads and acts on the phone's one view tree: the tree the screen draws and `input tap` hits.
 */

/** A UiAutomator2Exception: its W3C error code, HTTP status and the Java class its stack trace names. */
export class ServerError extends Error {
  constructor(
    readonly error: string,
    readonly status: number,
    message: string,
    readonly javaClass = 'io.appium.uiautomator2.common.exceptions.UiAutomator2Exception',
  ) {
    super(message);
  }
}

const EXCEPTIONS = 'io.appium.uiautomator2.common.exceptions';
export const unknownCommand = (message = 'The requested resource could not be found, or a request was received using an HTTP method that is not supported by the mapped resource') =>
  new ServerError('unknown command', 404, message, `${EXCEPTIONS}.UnknownCommandException`);
const noSuchElement = (message = 'An element could not be located on the page using the given search parameters') =>
  new ServerError('no such element', 404, message, `${EXCEPTIONS}.ElementNotFoundException`);
const invalidArgument = (message: string) => new ServerError('invalid argument', 400, message, `${EXCEPTIONS}.InvalidArgumentException`);
const invalidSelector = (message: string) => new ServerError('invalid selector', 400, message, `${EXCEPTIONS}.InvalidSelectorException`);
const stale = (message: string) => new ServerError('stale element reference', 404, message, `${EXCEPTIONS}.StaleElementReferenceException`);
const invalidState = (message: string) => new ServerError('invalid element state', 400, message, `${EXCEPTIONS}.InvalidElementStateException`);

export const W3C_ELEMENT_KEY = 'element-6066-11e4-a52e-4f735466cecf';
export const JWP_ELEMENT_KEY = 'ELEMENT';

/** Where a found element lives: found again by its place in the tree, and the same view only if it still looks the same. */
interface ElementRecord {
  path: number[];
  className: string;
  resourceId: string;
  packageName: string;
}

export interface Session {
  id: string;
  capabilities: unknown;
  elements: Map<string, ElementRecord>;
  /** The id each view already has, so finding it again answers the same id, as AxNodeInfoHelper.toUuid does. */
  ids: Map<string, string>;
}

/** The settings the server reports and accepts (io.appium.uiautomator2.model.settings), with their defaults. */
export function defaultSettings(): Record<string, unknown> {
  return {
    actionAcknowledgmentTimeout: 3000,
    allowInvisibleElements: false,
    alwaysTraversableViewClasses: '',
    ignoreUnimportantViews: false,
    currentDisplayId: 0,
    deferAccessibilityCacheReset: false,
    disableIdLocatorAutocompletion: false,
    elementResponseAttributes: 'name,text',
    enableMultiWindows: false,
    enableNotificationListener: true,
    enableTopmostWindowFromActivePackage: false,
    enforceXPath1: false,
    includeA11yActionsInPageSource: false,
    includeExtraRenderingInfo: false,
    includeExtrasInPageSource: false,
    keyInjectionDelay: 0,
    limitXPathContextScope: true,
    mapTestTagToResourceId: false,
    mjpegBilinearFiltering: false,
    mjpegScalingFactor: 50,
    mjpegServerFramerate: 10,
    mjpegServerPort: 7810,
    mjpegServerScreenshotQuality: 50,
    normalizeTagNames: false,
    scrollAcknowledgmentTimeout: 200,
    serverPort: 6790,
    shouldUseCompactResponses: true,
    shutdownOnPowerDisconnect: true,
    simpleBoundsCalculation: false,
    snapshotMaxDepth: 70,
    trackScrollEvents: true,
    useResourcesForOrientationDetection: false,
    waitForIdleTimeout: 10000,
    waitForSelectorTimeout: 10000,
  };
}

/** Attribute names and aliases GET /element/:id/attribute/:name knows (utils/Attribute.java). */
const ATTRIBUTE_ALIASES: Record<string, string> = {
  checkable: 'checkable',
  checked: 'checked',
  class: 'class',
  className: 'class',
  clickable: 'clickable',
  'content-desc': 'content-desc',
  contentDescription: 'content-desc',
  enabled: 'enabled',
  focusable: 'focusable',
  focused: 'focused',
  'long-clickable': 'long-clickable',
  longClickable: 'long-clickable',
  package: 'package',
  password: 'password',
  'resource-id': 'resource-id',
  resourceId: 'resource-id',
  scrollable: 'scrollable',
  'selection-start': 'selection-start',
  'selection-end': 'selection-end',
  selected: 'selected',
  text: 'text',
  name: 'text',
  hint: 'hint',
  bounds: 'bounds',
  displayed: 'displayed',
};

function attribute(n: UiNode, name: string): string | null {
  const attr = ATTRIBUTE_ALIASES[name];
  switch (attr) {
    case 'text':
      return n.text;
    case 'content-desc':
      return n.contentDesc || null;
    case 'class':
      return n.className;
    case 'resource-id':
      return n.resourceId || null;
    case 'package':
      return n.packageName;
    case 'bounds':
      return boundsString(n);
    case 'hint':
      return n.hint ?? null;
    case 'displayed':
      return 'true';
    case 'selection-start':
    case 'selection-end':
      return null;
    case 'checkable':
    case 'checked':
    case 'clickable':
    case 'enabled':
    case 'focusable':
    case 'focused':
    case 'password':
    case 'scrollable':
    case 'selected':
      return String(n[attr]);
    case 'long-clickable':
      return String(n.longClickable);
    default:
      throw new ServerError(
        'unknown command',
        404,
        `'${name}' attribute is unknown for the element. Only the following attributes are supported: [${Object.keys(ATTRIBUTE_ALIASES).join(', ')}]`,
        `${EXCEPTIONS}.NoSuchAttributeException`,
      );
  }
}

export interface RouteContext {
  params: Record<string, string>;
  body: unknown;
  /** Set for every route under /session/:sessionId once the id is checked against the active session. */
  session: Session;
}

export interface ServerHost {
  device: Device;
  screen: Screen;
  settings: Record<string, unknown>;
  version: { name: string; code: number };
  session: Session | undefined;
  /** ServerInstrumentation.stop(): the instrumentation, and with it `am instrument -w`, ends. */
  stop(): void;
}

export interface Route {
  method: 'GET' | 'POST' | 'DELETE';
  /** AppiumServlet's mapped URI, `:name` for a path parameter. */
  path: string;
  /** Status, new session and the sessions list answer without a session (NoSessionCommandHandler). */
  noSession?: boolean;
  handle(host: ServerHost, ctx: RouteContext): unknown;
}

function bodyField(body: unknown, name: string): unknown {
  return body && typeof body === 'object' ? (body as Record<string, unknown>)[name] : undefined;
}

/** KeyCodeHandler: `{keycode, metastate?, flags?}`. */
function pressKeycode(host: ServerHost, ctx: RouteContext): null {
  const code = bodyField(ctx.body, 'keycode');
  if (typeof code !== 'number' || !Number.isInteger(code)) throw invalidArgument("'keycode' is mandatory and must be an integer");
  host.device.keyevent(code);
  return null;
}

function requiredString(body: unknown, name: string): string {
  const v = bodyField(body, name);
  if (typeof v !== 'string') throw invalidArgument(`'${name}' is mandatory and must be a string`);
  return v;
}

function window(host: ServerHost): Window {
  const { width, height } = host.device.logicalSize;
  return {
    tree: () => host.screen.tree(),
    display: { rotation: host.device.rotation, width, height },
    packageName: host.device.windowPackage,
    completeIds: host.settings.disableIdLocatorAutocompletion !== true,
  };
}

function elementModel(session: Session, l: Located): Record<string, string> {
  const n = l.node;
  const key = `${n.packageName}|${l.path.join('/')}|${n.className}|${n.resourceId}`;
  let id = session.ids.get(key);
  if (!id) {
    id = randomUUID();
    session.ids.set(key, id);
    session.elements.set(id, { path: l.path, className: n.className, resourceId: n.resourceId, packageName: n.packageName });
  }
  return { [JWP_ELEMENT_KEY]: id, [W3C_ELEMENT_KEY]: id };
}

/** The element as the window shows it now; gone or replaced by another kind of view, it is stale. */
function element(host: ServerHost, session: Session, id: string): Located {
  const record = session.elements.get(id);
  if (!record) throw stale(`The element identified by '${id}' is not present in the cache or has expired. Try to find it again`);
  const root = host.screen.tree();
  const node = root && nodeAt(root, record.path);
  if (!node || node.className !== record.className || node.resourceId !== record.resourceId || node.packageName !== record.packageName) {
    throw stale(`The element '${id}' does not exist in DOM anymore`);
  }
  return { node, path: record.path };
}

function center(n: UiNode): { x: number; y: number } {
  return { x: Math.floor((n.bounds.left + n.bounds.right) / 2), y: Math.floor((n.bounds.top + n.bounds.bottom) / 2) };
}

function rect(n: UiNode) {
  const b = n.bounds;
  return { x: b.left, y: b.top, width: b.right - b.left, height: b.bottom - b.top };
}

function findElements(host: ServerHost, ctx: RouteContext): Located[] {
  const strategy = requiredString(ctx.body, 'strategy');
  const selector = requiredString(ctx.body, 'selector');
  const contextId = bodyField(ctx.body, 'context');
  const context = typeof contextId === 'string' && contextId !== '' ? element(host, ctx.session, contextId) : undefined;
  try {
    return find(window(host), strategy, selector, context);
  } catch (err) {
    if (err instanceof LocatorError) throw err.error === 'invalid selector' ? invalidSelector(err.message) : noSuchElement(err.message);
    throw err;
  }
}

/** SendKeysToElement's setText: ACTION_SET_TEXT with the old text kept unless `replace`, and a trailing "\n" pressed as Enter. */
function setText(host: ServerHost, n: UiNode, body: unknown): void {
  let text = requiredString(body, 'text');
  const replace = bodyField(body, 'replace') === true;
  const pressEnter = text.endsWith('\\n');
  if (pressEnter) text = text.slice(0, -2);
  if (!n.onSetText) throw invalidState(`Cannot set the element to '${text}'. Did you interact with the correct element?`);
  // A field showing its hint has no text of its own to keep.
  if (!replace && !n.showingHint) text = n.text + text;
  n.onSetText(text);
  if (pressEnter) host.device.keyevent(66);
}

/** GetElementScreenshot: the screen cropped to the element's bounds, base64 PNG. */
function elementScreenshot(host: ServerHost, n: UiNode): string {
  const canvas = host.screen.canvas();
  const left = Math.max(0, n.bounds.left);
  const top = Math.max(0, n.bounds.top);
  const width = Math.min(canvas.width, n.bounds.right) - left;
  const height = Math.min(canvas.height, n.bounds.bottom) - top;
  if (width <= 0 || height <= 0) throw new ServerError('unknown error', 500, 'Cannot crop the screenshot: the element is off the screen', `${EXCEPTIONS}.CropScreenshotException`);
  return encodePng(canvas, { left, top, width, height }).toString('base64');
}

function originElement(host: ServerHost, ctx: RouteContext): UiNode | undefined {
  const origin = bodyField(ctx.body, 'origin');
  if (!origin || typeof origin !== 'object') return undefined;
  const id = (origin as Record<string, unknown>)[W3C_ELEMENT_KEY] ?? (origin as Record<string, unknown>)[JWP_ELEMENT_KEY];
  if (typeof id !== 'string') throw invalidArgument("'origin' must be an element reference");
  return element(host, ctx.session, id).node;
}

/** The point of a click gesture: the origin's centre, an offset within it, or an absolute offset. */
function gesturePoint(host: ServerHost, ctx: RouteContext): { x: number; y: number } {
  const origin = originElement(host, ctx);
  const offset = bodyField(ctx.body, 'offset') as { x?: unknown; y?: unknown } | undefined;
  if (offset && typeof offset.x === 'number' && typeof offset.y === 'number') {
    return { x: Math.round((origin?.bounds.left ?? 0) + offset.x), y: Math.round((origin?.bounds.top ?? 0) + offset.y) };
  }
  if (!origin) throw invalidArgument('Either the element origin or the offset must be provided');
  return center(origin);
}

/**
 * The swipe and scroll gestures (mobile: swipeGesture, scrollGesture): a finger across `percent` of the element's or
 * area's size at `speed` pixels a second. A swipe moves the finger in `direction`; a scroll moves the content there,
 * so the finger goes the other way. Answers whether anything under the finger moved.
 */
async function swipeGesture(host: ServerHost, ctx: RouteContext, scroll: boolean): Promise<boolean> {
  const direction = bodyField(ctx.body, 'direction');
  if (direction !== 'up' && direction !== 'down' && direction !== 'left' && direction !== 'right') {
    throw invalidArgument("'direction' must be one of up, down, left or right");
  }
  const origin = originElement(host, ctx);
  const area = bodyField(ctx.body, 'area') as Record<string, unknown> | undefined;
  let box = origin?.bounds;
  if (!box && area && ['left', 'top', 'width', 'height'].every((k) => typeof area[k] === 'number')) {
    const [left, top, width, height] = [area.left, area.top, area.width, area.height] as number[];
    box = { left: left!, top: top!, right: left! + width!, bottom: top! + height! };
  }
  if (!box) throw invalidArgument('The gesture area coordinates must be provided if element is not set');
  const percent = bodyField(ctx.body, 'percent');
  if (typeof percent !== 'number' || percent <= 0 || percent > 1) throw invalidArgument("'percent' must be a number in (0, 1]");
  const dp = host.device.options.density / 160;
  const speedArg = bodyField(ctx.body, 'speed');
  const speed = typeof speedArg === 'number' && speedArg > 0 ? speedArg : 5000 * dp;
  const cx = (box.left + box.right) / 2;
  const cy = (box.top + box.bottom) / 2;
  const half = { x: ((box.right - box.left) * percent) / 2, y: ((box.bottom - box.top) * percent) / 2 };
  const fingerUp = direction === (scroll ? 'down' : 'up');
  const fingerLeft = direction === (scroll ? 'right' : 'left');
  const vertical = direction === 'up' || direction === 'down';
  const from = vertical ? { x: cx, y: fingerUp ? cy + half.y : cy - half.y } : { x: fingerLeft ? cx + half.x : cx - half.x, y: cy };
  const to = vertical ? { x: cx, y: fingerUp ? cy - half.y : cy + half.y } : { x: fingerLeft ? cx - half.x : cx + half.x, y: cy };
  const durationMs = Math.round((Math.hypot(to.x - from.x, to.y - from.y) / speed) * 1000);
  await delay(Math.min(durationMs, 10_000));
  const before = host.device.rev;
  host.screen.swipe(Math.round(from.x), Math.round(from.y), Math.round(to.x), Math.round(to.y), durationMs);
  // The swipe itself counts one change; anything more is the content moving.
  return host.device.rev > before + 1;
}

function focused(host: ServerHost): Located {
  const root = host.screen.tree();
  const hit = root && flatten(root).find((l) => l.node.focused);
  if (!hit) throw noSuchElement();
  return hit;
}

function noAlert(): never {
  throw new ServerError('no such alert', 404, 'No alert is present on the screen', `${EXCEPTIONS}.NoAlertOpenException`);
}

function deviceInfo(device: Device) {
  const o = device.options;
  return {
    androidId: device.settings.secure.get('android_id') ?? '',
    manufacturer: o.manufacturer,
    model: o.model,
    brand: o.brand,
    apiVersion: String(o.sdk),
    platformVersion: o.osVersion,
    carrierName: '',
    realDisplaySize: `${o.width}x${o.height}`,
    displayDensity: o.density,
    networks: device.wifi
      ? [
          {
            type: 1,
            typeName: 'WIFI',
            subtype: 0,
            subtypeName: '',
            isConnected: true,
            detailedState: 'CONNECTED',
            state: 'CONNECTED',
            extraInfo: '"BenchtopLab"',
            isAvailable: true,
            isRoaming: false,
            isFailover: false,
          },
        ]
      : [],
    locale: (device.props.get('persist.sys.locale') ?? 'en-US').replace('-', '_'),
    timeZone: device.props.get('persist.sys.timezone') ?? 'UTC',
    bluetooth: { state: device.bluetooth ? 'ON' : 'OFF' },
  };
}

export const ROUTES: Route[] = [
  {
    method: 'GET',
    path: '/status',
    noSession: true,
    handle: (host) => ({
      ready: true,
      message: 'UiAutomator2 Server is ready to accept commands',
      build: { versionName: host.version.name, versionCode: host.version.code },
    }),
  },
  {
    method: 'POST',
    path: '/session',
    noSession: true,
    handle: (host, ctx) => {
      const capabilities = bodyField(ctx.body, 'capabilities');
      if (!capabilities || typeof capabilities !== 'object') {
        throw new ServerError('session not created', 500, "'capabilities' are mandatory for session creation", `${EXCEPTIONS}.SessionNotCreatedException`);
      }
      // One session at a time: a new one replaces the old, and settings start over (Settings.resetForNewSession).
      host.session = { id: randomUUID(), capabilities, elements: new Map(), ids: new Map() };
      host.settings = defaultSettings();
      return { sessionId: host.session.id, capabilities };
    },
  },
  {
    method: 'GET',
    path: '/sessions',
    noSession: true,
    handle: (host) => (host.session ? [{ id: host.session.id, capabilities: host.session.capabilities }] : []),
  },
  {
    method: 'DELETE',
    path: '/session/:sessionId',
    handle: (host) => {
      host.session = undefined;
      // The server stops its instrumentation shortly after answering (a 15 ms postDelayed).
      setTimeout(() => host.stop(), 15).unref();
      return null;
    },
  },
  { method: 'GET', path: '/session/:sessionId', handle: () => ({ lastScrollData: null }) },
  {
    method: 'POST',
    path: '/session/:sessionId/element',
    handle: (host, ctx) => {
      const [first] = findElements(host, ctx);
      if (!first) throw noSuchElement();
      return elementModel(ctx.session, first);
    },
  },
  {
    method: 'POST',
    path: '/session/:sessionId/elements',
    handle: (host, ctx) => findElements(host, ctx).map((l) => elementModel(ctx.session, l)),
  },
  {
    method: 'GET',
    path: '/session/:sessionId/element/active',
    handle: (host, ctx) => elementModel(ctx.session, focused(host)),
  },
  {
    method: 'POST',
    path: '/session/:sessionId/element/:id/click',
    handle: (host, ctx) => {
      const { x, y } = center(element(host, ctx.session, ctx.params.id!).node);
      host.screen.tap(x, y);
      return null;
    },
  },
  {
    method: 'POST',
    path: '/session/:sessionId/element/:id/clear',
    handle: (host, ctx) => {
      element(host, ctx.session, ctx.params.id!).node.onSetText?.('');
      return null;
    },
  },
  {
    method: 'POST',
    path: '/session/:sessionId/element/:id/value',
    handle: (host, ctx) => {
      setText(host, element(host, ctx.session, ctx.params.id!).node, ctx.body);
      return null;
    },
  },
  {
    method: 'POST',
    path: '/session/:sessionId/keys',
    handle: (host, ctx) => {
      setText(host, focused(host).node, ctx.body);
      return null;
    },
  },
  {
    method: 'GET',
    path: '/session/:sessionId/element/:id/text',
    handle: (host, ctx) => element(host, ctx.session, ctx.params.id!).node.text,
  },
  {
    method: 'GET',
    path: '/session/:sessionId/element/:id/attribute/:name',
    handle: (host, ctx) => attribute(element(host, ctx.session, ctx.params.id!).node, ctx.params.name!),
  },
  {
    method: 'GET',
    path: '/session/:sessionId/element/:id/rect',
    handle: (host, ctx) => rect(element(host, ctx.session, ctx.params.id!).node),
  },
  {
    method: 'GET',
    path: '/session/:sessionId/element/:id/size',
    handle: (host, ctx) => {
      const { width, height } = rect(element(host, ctx.session, ctx.params.id!).node);
      return { width, height };
    },
  },
  {
    method: 'GET',
    path: '/session/:sessionId/element/:id/location',
    handle: (host, ctx) => {
      const { x, y } = rect(element(host, ctx.session, ctx.params.id!).node);
      return { x, y };
    },
  },
  {
    method: 'GET',
    path: '/session/:sessionId/element/:id/name',
    handle: (host, ctx) => element(host, ctx.session, ctx.params.id!).node.contentDesc || null,
  },
  {
    method: 'GET',
    path: '/session/:sessionId/source',
    handle: (host) => {
      const { width, height } = host.device.logicalSize;
      return sourceXml(host.screen.tree(), { rotation: host.device.rotation, width, height });
    },
  },
  { method: 'GET', path: '/session/:sessionId/screenshot', handle: (host) => host.screen.png().toString('base64') },
  {
    method: 'GET',
    path: '/session/:sessionId/element/:id/screenshot',
    handle: (host, ctx) => elementScreenshot(host, element(host, ctx.session, ctx.params.id!).node),
  },
  {
    method: 'GET',
    path: '/session/:sessionId/screenshot/:id',
    handle: (host, ctx) => elementScreenshot(host, element(host, ctx.session, ctx.params.id!).node),
  },
  {
    method: 'GET',
    path: '/session/:sessionId/window/:windowHandle/size',
    handle: (host) => {
      const { width, height } = host.device.logicalSize;
      return { width, height };
    },
  },
  {
    method: 'GET',
    path: '/session/:sessionId/orientation',
    handle: (host) => (host.device.rotation % 2 === 1 ? 'LANDSCAPE' : 'PORTRAIT'),
  },
  { method: 'GET', path: '/session/:sessionId/rotation', handle: (host) => ({ x: 0, y: 0, z: host.device.rotation * 90 }) },
  {
    method: 'POST',
    path: '/session/:sessionId/orientation',
    handle: (host, ctx) => {
      const orientation = String(bodyField(ctx.body, 'orientation') ?? '').toUpperCase();
      if (orientation !== 'PORTRAIT' && orientation !== 'LANDSCAPE') throw invalidArgument("'orientation' must be PORTRAIT or LANDSCAPE");
      // UiDevice.setOrientation*: auto-rotate off, the user rotation set.
      host.device.settings.system.set('accelerometer_rotation', '0');
      host.device.settings.system.set('user_rotation', orientation === 'LANDSCAPE' ? '1' : '0');
      host.device.changed();
      return orientation;
    },
  },
  // No simulated app raises a dialog, so there is never an alert to read, accept or dismiss.
  { method: 'GET', path: '/session/:sessionId/alert/text', handle: noAlert },
  { method: 'POST', path: '/session/:sessionId/alert/accept', handle: noAlert },
  { method: 'POST', path: '/session/:sessionId/alert/dismiss', handle: noAlert },
  {
    method: 'POST',
    path: '/session/:sessionId/appium/device/get_clipboard',
    handle: (host, ctx) => {
      const type = bodyField(ctx.body, 'contentType');
      if (type !== undefined && String(type).toUpperCase() !== 'PLAINTEXT') throw invalidArgument(`Only '[PLAINTEXT]' content types are supported. '${String(type)}' is given instead`);
      return Buffer.from(host.device.clipboard, 'utf8').toString('base64');
    },
  },
  {
    method: 'POST',
    path: '/session/:sessionId/appium/device/set_clipboard',
    handle: (host, ctx) => {
      const type = bodyField(ctx.body, 'contentType');
      if (type !== undefined && String(type).toUpperCase() !== 'PLAINTEXT') throw invalidArgument(`Only '[PLAINTEXT]' content types are supported. '${String(type)}' is given instead`);
      host.device.clipboard = Buffer.from(requiredString(ctx.body, 'content'), 'base64').toString('utf8');
      return null;
    },
  },
  {
    method: 'POST',
    path: '/session/:sessionId/back',
    handle: (host) => {
      host.device.keyevent(4);
      return null;
    },
  },
  {
    method: 'POST',
    path: '/session/:sessionId/appium/device/press_keycode',
    handle: pressKeycode,
  },
  {
    method: 'POST',
    // The simulated phone has no key-hold timing: a long press is the same key event.
    path: '/session/:sessionId/appium/device/long_press_keycode',
    handle: pressKeycode,
  },
  {
    method: 'POST',
    path: '/session/:sessionId/actions',
    handle: async (host, ctx) => {
      const centerOf = (ref: Record<string, unknown>) => {
        const id = ref[W3C_ELEMENT_KEY] ?? ref[JWP_ELEMENT_KEY];
        if (typeof id !== 'string') throw invalidArgument('An element origin must be an element reference');
        return center(element(host, ctx.session, id).node);
      };
      try {
        await performActions(ctx.body, host.device, host.screen, centerOf);
      } catch (err) {
        if (err instanceof ActionsError) throw invalidArgument(err.message);
        throw err;
      }
      return null;
    },
  },
  {
    method: 'POST',
    path: '/session/:sessionId/appium/gestures/click',
    handle: (host, ctx) => {
      const { x, y } = gesturePoint(host, ctx);
      host.screen.tap(x, y);
      return null;
    },
  },
  {
    method: 'POST',
    path: '/session/:sessionId/appium/gestures/long_click',
    handle: (host, ctx) => {
      const { x, y } = gesturePoint(host, ctx);
      host.screen.longPress(x, y);
      return null;
    },
  },
  {
    method: 'POST',
    path: '/session/:sessionId/appium/gestures/swipe',
    handle: async (host, ctx) => {
      await swipeGesture(host, ctx, false);
      return null;
    },
  },
  { method: 'POST', path: '/session/:sessionId/appium/gestures/scroll', handle: (host, ctx) => swipeGesture(host, ctx, true) },
  { method: 'GET', path: '/session/:sessionId/appium/settings', handle: (host) => host.settings },
  {
    method: 'POST',
    path: '/session/:sessionId/appium/settings',
    handle: (host, ctx) => {
      const settings = bodyField(ctx.body, 'settings');
      if (!settings || typeof settings !== 'object') throw invalidArgument("'settings' is mandatory and must be an object");
      // Unknown names are skipped, as UpdateSettings does.
      for (const [name, value] of Object.entries(settings)) if (name in host.settings) host.settings[name] = value;
      return null;
    },
  },
  {
    method: 'POST',
    // OpenNotification: UiDevice.openNotification, which pulls the shade down, or fails on a screen that is off.
    path: '/session/:sessionId/appium/device/open_notifications',
    handle: (host) => {
      if (!host.device.openShade()) throw new ServerError('unknown error', 500, 'Device failed to open notifications.');
      return null;
    },
  },
  { method: 'GET', path: '/session/:sessionId/appium/device/info', handle: (host) => deviceInfo(host.device) },
  { method: 'GET', path: '/session/:sessionId/appium/device/pixel_ratio', handle: (host) => host.device.options.density / 160 },
  { method: 'GET', path: '/session/:sessionId/appium/device/display_density', handle: (host) => host.device.options.density },
  {
    method: 'GET',
    path: '/session/:sessionId/appium/device/system_bars',
    handle: (host) => ({ statusBar: Math.round((24 * host.device.options.density) / 160) }),
  },
  {
    method: 'GET',
    path: '/session/:sessionId/appium/device/battery_info',
    // BatteryManager's BATTERY_STATUS_CHARGING (2), FULL (5) and DISCHARGING (3).
    handle: (host) => ({ level: host.device.battery / 100, status: host.device.plugged ? (host.device.battery >= 100 ? 5 : 2) : 3 }),
  },
];
