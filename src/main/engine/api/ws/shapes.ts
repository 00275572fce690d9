import AjvModule from 'ajv';
import { Type, type Static, type TSchema } from 'typebox';
import { BUTTONS, DeviceActionBody, DeviceFilter, type Button, type DeviceAction, type UiElement } from '../../../../shared/api/devices.js';
import type { Frame } from '../../services/live-screen.js';
import type { DeviceAllocationRow } from '../../store/devices.js';
import type { FleetDeviceRow } from '../../store/fleet.js';
import { fleetState } from '../presenters/sessions.js';
import { invalidParams, unsupported } from './jsonrpc.js';
import { lazily } from '../../domain/lazily.js';

/**
 * The one place where /ws's JSON-RPC shapes meet Benchtop's domain. Params and results are the deployed clients'
 * (mobilecli 1.0.9 `remote`, @mobilenext/mobilecli 0.1.64 `fleet`, @mobilewright/driver-mobilenext 0.0.57), read
 * from their code; every device action becomes a DeviceAction and is validated by the shared vocabulary's schema,
 * so /ws accepts exactly what REST, MCP and the assistant accept.
 */

// ---- params ----

const DeviceId = Type.String({ minLength: 1, maxLength: 200, description: 'The phone\'s serial, as devices.list gives it.' });
/** Coordinates arrive as numbers; mobilewright sends a long press's unrounded. */
const Coordinate = Type.Number({ minimum: 0, maximum: 20000 });
const DurationMs = Type.Optional(Type.Number({ minimum: 0, maximum: 60000 }));
const BundleId = Type.String({ minLength: 1, maxLength: 255 });
const on = <T extends Record<string, TSchema>>(fields: T) => Type.Object({ deviceId: DeviceId, ...fields });

export const PARAMS = {
  none: Type.Object({}),
  devicesList: Type.Object({
    includeOffline: Type.Optional(Type.Boolean()),
    platform: Type.Optional(Type.String()),
    type: Type.Optional(Type.String()),
  }),
  allocate: Type.Object({ filters: Type.Array(DeviceFilter, { minItems: 1, maxItems: 20 }) }),
  device: on({}),
  screenshot: on({
    format: Type.Optional(Type.String({ enum: ['png', 'jpeg'] })),
    quality: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  }),
  dumpUi: on({ format: Type.Optional(Type.String({ enum: ['json', 'raw'] })) }),
  tap: on({ x: Coordinate, y: Coordinate }),
  longPress: on({ x: Coordinate, y: Coordinate, duration: DurationMs }),
  swipe: on({ x1: Coordinate, y1: Coordinate, x2: Coordinate, y2: Coordinate, duration: DurationMs }),
  gesture: on({
    actions: Type.Array(
      Type.Object({
        type: Type.String({ enum: ['pointerMove', 'pointerDown', 'pointerUp', 'pause'] }),
        x: Type.Optional(Coordinate),
        y: Type.Optional(Coordinate),
        duration: DurationMs,
        button: Type.Optional(Type.Integer()),
      }),
      { minItems: 1, maxItems: 200 },
    ),
  }),
  text: on({ text: Type.String({ minLength: 1, maxLength: 4000 }) }),
  keys: on({ keys: Type.Array(Type.String({ minLength: 1, maxLength: 50 }), { minItems: 1, maxItems: 100 }) }),
  button: on({ button: Type.String({ minLength: 1, maxLength: 50 }) }),
  orientation: on({ orientation: Type.String({ minLength: 1, maxLength: 20 }) }),
  url: on({ url: Type.String({ minLength: 1, maxLength: 2000 }) }),
  app: on({ bundleId: BundleId }),
  launch: on({ bundleId: BundleId, locales: Type.Optional(Type.Array(Type.String())), activity: Type.Optional(Type.String()) }),
  crash: on({ id: Type.String({ minLength: 1, maxLength: 500 }) }),
};

export type Params<K extends keyof typeof PARAMS> = Static<(typeof PARAMS)[K]>;

// ---- params to device actions ----

const Ajv = (AjvModule as unknown as { default: typeof AjvModule }).default ?? AjvModule;
/**
 * One validator per action type, from the shared union's members, so that an error names the field that failed.
 * Each compiles on its first call: compiling them all when the module loads was a tenth of the engine's start-up.
 */
const validators = lazily(() => {
  const ajv = new Ajv({ strict: false });
  return new Map(
    (DeviceActionBody.anyOf as Array<{ properties: { type: { const: string } } }>).map((member) => [member.properties.type.const, lazily(() => ajv.compile(member))]),
  );
});

/** The action, checked against the shared vocabulary: a package name or URL it refuses is a bad param here too. */
export function checked(action: DeviceAction): DeviceAction {
  const { type } = action;
  const validate = validators().get(type)!();
  if (!validate(action)) {
    const e = validate.errors?.[0];
    throw invalidParams(`Invalid params: ${type} ${e ? `${e.instancePath.replace(/^\//, '') || 'action'} ${e.message}` : 'is not valid'}.`);
  }
  return action;
}

const round = Math.round;
const ms = (duration: number | undefined) => (duration === undefined ? undefined : Math.max(1, round(duration)));

export const toAction = {
  tap: (p: Params<'tap'>): DeviceAction => checked({ type: 'tap', x: round(p.x), y: round(p.y) }),
  longPress: (p: Params<'longPress'>): DeviceAction =>
    checked({ type: 'longPress', x: round(p.x), y: round(p.y), ...(p.duration !== undefined ? { durationMs: ms(p.duration) } : {}) }),
  swipe: (p: Params<'swipe'>): DeviceAction =>
    checked({ type: 'swipe', fromX: round(p.x1), fromY: round(p.y1), toX: round(p.x2), toY: round(p.y2), ...(p.duration !== undefined ? { durationMs: ms(p.duration) } : {}) }),
  text: (p: Params<'text'>): DeviceAction => checked({ type: 'typeText', text: p.text }),
  button: (p: Params<'button'>): DeviceAction => checked({ type: 'pressButton', button: buttonOf(p.button) }),
  orientation: (p: Params<'orientation'>): DeviceAction => {
    const orientation = p.orientation.toLowerCase();
    if (orientation !== 'portrait' && orientation !== 'landscape') throw invalidParams('Invalid params: orientation is portrait or landscape.');
    return checked({ type: 'setOrientation', orientation });
  },
  url: (p: Params<'url'>): DeviceAction => checked({ type: 'openUrl', url: p.url }),
  launch: (p: Params<'launch'>): DeviceAction => {
    if (p.locales?.length) throw unsupported('Launching an app with locales is not supported by Benchtop; launch it without them.');
    if (p.activity) throw unsupported('Launching a given activity is not supported by Benchtop; launch the app by its package name.');
    return checked({ type: 'launchApp', packageName: p.bundleId });
  },
  terminate: (p: Params<'app'>): DeviceAction => checked({ type: 'terminateApp', packageName: p.bundleId }),
  uninstall: (p: Params<'app'>): DeviceAction => checked({ type: 'uninstallApp', packageName: p.bundleId }),
  keys: (p: Params<'keys'>): DeviceAction[] => p.keys.map(keyAction),
  gesture: (p: Params<'gesture'>): DeviceAction => gestureAction(p.actions),
};

/** mobilecli's button names are the vocabulary's, in any case; a few have their Android names too. */
const BUTTON_ALIASES: Record<string, Button> = { DEL: 'BACKSPACE', FORWARD_DEL: 'DELETE', ESC: 'ESCAPE', RETURN: 'ENTER', RECENTS: 'APP_SWITCH' };

function buttonOf(name: string): Button {
  const upper = name.toUpperCase().replace(/^KEYCODE_/, '');
  const button = (BUTTONS as readonly string[]).includes(upper) ? (upper as Button) : BUTTON_ALIASES[upper];
  if (!button) throw invalidParams(`Invalid params: unknown button "${name}"; one of ${BUTTONS.join(', ')}.`);
  return button;
}

/** A key of device.io.keys: a named key (enter, backspace, ...), or one character to type. */
function keyAction(key: string): DeviceAction {
  if (key.length > 1 && key.includes('+')) {
    throw unsupported(`Key combinations such as "${key}" are not supported on Android by Benchtop; send the keys one at a time.`);
  }
  if ([...key].length === 1) return checked({ type: 'typeText', text: key });
  return checked({ type: 'pressButton', button: buttonOf(key) });
}

/**
 * A one-finger W3C pointer sequence (pointerMove to place, pointerDown, pointerMove to drag, pointerUp) becomes a
 * tap, a long press or a swipe. Android's shell input draws one straight stroke, so a path with turns is refused.
 */
function gestureAction(actions: Params<'gesture'>['actions']): DeviceAction {
  let at: { x: number; y: number } | undefined;
  let down: { x: number; y: number } | undefined;
  let end: { x: number; y: number } | undefined;
  let moves = 0;
  let held = 0;
  let released = false;
  for (const a of actions) {
    const point = a.x !== undefined && a.y !== undefined ? { x: round(a.x), y: round(a.y) } : undefined;
    if (released) throw unsupported('Only one-finger gestures with one press are supported by Benchtop.');
    if (a.type === 'pointerMove') {
      if (!point) throw invalidParams('Invalid params: pointerMove needs x and y.');
      if (down) {
        moves++;
        end = point;
        held += a.duration ?? 0;
      } else at = point;
    } else if (a.type === 'pointerDown') {
      down = at ?? point;
      if (!down) throw invalidParams('Invalid params: pointerDown needs a position (x and y, or a pointerMove before it).');
      end = down;
    } else if (a.type === 'pause') {
      if (down) held += a.duration ?? 0;
    } else {
      if (!down) throw invalidParams('Invalid params: pointerUp before pointerDown.');
      released = true;
    }
  }
  if (!down || !end || !released) throw invalidParams('Invalid params: a gesture is pointerDown ... pointerUp.');
  if (moves > 1) throw unsupported('Gestures whose path turns are not supported on Android by Benchtop: a gesture is one straight stroke.');
  if (moves === 0 || (end.x === down.x && end.y === down.y)) {
    return held >= 500 ? checked({ type: 'longPress', x: down.x, y: down.y, durationMs: ms(held) }) : checked({ type: 'tap', x: down.x, y: down.y });
  }
  return checked({ type: 'swipe', fromX: down.x, fromY: down.y, toX: end.x, toY: end.y, ...(held > 0 ? { durationMs: ms(held) } : {}) });
}

// ---- results ----

/** What the clients decode of a finished command: mobilecli's own server answers {"status":"ok"}. */
export const OK = { status: 'ok' } as const;

/**
 * A device as devices.list (mobilecli's DeviceInfo) shows it: id is the serial, or the allocation id while the phone
 * is still allocating. provider carries the allocation (mobilecli 1.0.9 matches on allocationId, 0.1.64 on sessionId,
 * which is the Benchtop session holding it).
 */
export function listedDevice(row: DeviceAllocationRow) {
  const state = fleetState(row.status);
  return {
    id: state === 'allocating' || !row.serial ? row.id : row.serial,
    name: row.name,
    platform: row.platform,
    type: row.type ?? 'real',
    version: row.osVersion,
    state,
    model: row.name,
    provider: { type: 'benchtop', allocationId: row.id, sessionId: row.sessionId },
  };
}

/**
 * device.info. mobilecli decodes the fields at the top level, mobilewright under `device` (as mobilecli's own server
 * sends them), so both are there.
 */
export function deviceInfo(row: DeviceAllocationRow, size: { width: number; height: number }) {
  const device = { ...listedDevice(row), screenSize: { width: size.width, height: size.height, scale: 1 } };
  return { ...device, device };
}

/** A device model fleet.listDevices offers: one per distinct model and version among the lab's phones. */
export function fleetModels(phones: readonly FleetDeviceRow[]) {
  const seen = new Map<string, { name: string; platform: string; type: string; version: string; formFactor: string }>();
  for (const p of phones) {
    if (p.state === 'gone') continue;
    const key = `${p.platform}\0${p.name}\0${p.osVersion}`;
    if (!seen.has(key)) seen.set(key, { name: p.name, platform: p.platform, type: p.type, version: p.osVersion, formFactor: 'phone' });
  }
  return { devices: [...seen.values()] };
}

/** fleet.allocate's answer: 1.0.9 reads allocationId and state, 0.1.64 sessionId and device. */
export function allocation(row: DeviceAllocationRow) {
  const listed = listedDevice(row);
  return {
    allocationId: row.id,
    sessionId: row.sessionId,
    state: listed.state,
    device: { id: listed.id, name: listed.name, platform: listed.platform, state: listed.state, model: listed.model },
  };
}

/** device.screenshot: a data URL, as mobilecli's server sends it; both clients strip the prefix. */
export const screenshot = (frame: Frame) => ({ format: frame.format, data: `data:image/${frame.format};base64,${frame.data.toString('base64')}` });

/** device.dump.ui: mobilecli's ScreenElement, with empty strings left out (they are omitempty in Go). */
export function screenElement(e: UiElement) {
  return {
    type: e.className,
    ...(e.text ? { text: e.text } : {}),
    ...(e.contentDescription ? { label: e.contentDescription } : {}),
    ...(e.resourceId ? { identifier: e.resourceId } : {}),
    rect: e.bounds,
  };
}

/** device.apps.list: an array of mobilecli's InstalledAppInfo (mobilewright takes an array too). */
export const installedApps = (packages: readonly string[]) => packages.map((packageName) => ({ packageName }));

/** device.apps.foreground: mobilecli's ForegroundAppInfo. */
export const foregroundApp = (packageName: string) => ({ packageName, appName: '', version: '' });
