import { Type, type Static, type TSchema } from 'typebox';

export const DeviceFilter = Type.Object(
  {
    attribute: Type.String({ description: 'platform, type, name, version or serial', maxLength: 50 }),
    operator: Type.String({ description: 'EQUALS, STARTS_WITH, CONTAINS, GREATER_THAN, GREATER_THAN_OR_EQUALS, LESS_THAN, LESS_THAN_OR_EQUALS', maxLength: 50 }),
    value: Type.String({ maxLength: 200 }),
  },
  { additionalProperties: false },
);

export const AllocateDeviceBody = Type.Object(
  {
    filters: Type.Array(DeviceFilter, { maxItems: 20 }),
    installApps: Type.Optional(Type.Array(Type.String({ maxLength: 100 }), { maxItems: 20, description: 'file:<fileId> entries' })),
  },
  { additionalProperties: false },
);
export type AllocateDeviceBody = Static<typeof AllocateDeviceBody>;

export const FleetDevice = Type.Object({
  platform: Type.String(),
  type: Type.String(),
  name: Type.String(),
  osVersion: Type.String(),
  serial: Type.String(),
  state: Type.String({ description: 'device, unauthorized (an Android phone that has not allowed USB debugging, an iPhone that has not trusted this computer), wda_unavailable (an iPhone without a running WebDriverAgent; see docs/iphones.md), offline, or gone (not attached now)' }),
  battery: Type.Union([Type.Integer(), Type.Null()]),
  model: Type.Optional(Type.String({ description: 'The hardware model while attached: ro.product.model on Android, the ProductType (e.g. iPhone14,6) on an iPhone.' })),
  steps: Type.Optional(Type.String({ description: 'While unauthorized or wda_unavailable: what to do on the phone or this computer so that it can be allocated.' })),
  note: Type.Optional(Type.String({ description: 'The lab owner\'s note on the phone ("shelf B", "SIM for SMS tests"): what tells identical phones apart.' })),
  wdaLaunch: Type.Optional(
    Type.Union([Type.Literal('lockdown'), Type.Literal('tunnel'), Type.Literal('devicectl'), Type.Literal('external')], {
      description:
        'An iPhone whose WebDriverAgent answers: how it runs. lockdown: the lab started it through testmanagerd over lockdown (before iOS 17); ' +
        'tunnel: through a userspace CoreDeviceProxy tunnel (iOS 17.4+, any host); devicectl: with a Mac\'s xcrun devicectl; external: it was ' +
        'already answering when the lab first asked. Absent on Android phones and while WDA does not answer (see steps, and docs/iphones.md).',
    }),
  ),
  host: Type.Union([Type.String(), Type.Null()], { description: 'The provider the phone is plugged into (its name), or null for this workstation\'s own USB.' }),
  held: Type.Boolean({ description: 'Whether an allocation holds it (or it is being cleaned after one).' }),
  heldBy: Type.Optional(
    Type.Object(
      {
        sessionId: Type.String(),
        allocationId: Type.String(),
        idleReleaseAt: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'When it goes back to the pool unless used; null while idle release is off.' })),
        releaseWarning: Type.Optional(
          Type.Object(
            { reason: Type.String(), releaseAt: Type.String({ format: 'date-time' }) },
            { description: 'The lab will release it at releaseAt: idle_timeout (keep it to start over) or reserved.' },
          ),
        ),
        memberEmail: Type.Optional(Type.String({ description: 'The email of the member of your organization who allocated it (for an API key, the member who made the key).' })),
        webdriver: Type.Optional(Type.Boolean({ description: 'True while a WebDriver session (/wd/hub) drives it: an Appium run holds it.' })),
      },
      { description: 'Present only when your own organization holds it: another organization\'s hold shows as held alone.' },
    ),
  ),
  booking: Type.Optional(
    Type.Object(
      {
        startsAt: Type.String({ format: 'date-time' }),
        endsAt: Type.String({ format: 'date-time' }),
        own: Type.Boolean({ description: 'True when your own organization booked it (it may use the phone then); another organization\'s booking is only booked, never whose.' }),
      },
      { description: 'The reservation of this phone that is running now or starts within the hour, if any.' },
    ),
  ),
  lastSeenAt: Type.String({ format: 'date-time' }),
});
export type FleetDevice = Static<typeof FleetDevice>;

/** A note of at most 200 characters; null or an empty one removes it. */
export const FleetDeviceNotePatch = Type.Object({ note: Type.Union([Type.String({ maxLength: 200 }), Type.Null()]) }, { additionalProperties: false });
export const FleetDeviceParams = Type.Object({ serial: Type.String({ minLength: 1, maxLength: 200 }) });

/**
 * The device-control vocabulary, declared once: these schemas validate REST bodies, /ws params, MCP tool arguments
 * and the assistant's tool calls, and their static types are what the engine's drivers and the renderer use.
 */

export const UiElement = Type.Object({
  text: Type.String(),
  contentDescription: Type.String(),
  resourceId: Type.String(),
  className: Type.String(),
  bounds: Type.Object({ x: Type.Integer(), y: Type.Integer(), width: Type.Integer(), height: Type.Integer() }),
  clickable: Type.Boolean(),
});
export type UiElement = Static<typeof UiElement>;

/** Hardware and navigation buttons, and the editing keys a person types on the phone page. */
export const BUTTONS = [
  'HOME', 'BACK', 'ENTER', 'VOLUME_UP', 'VOLUME_DOWN', 'POWER', 'APP_SWITCH',
  'BACKSPACE', 'DELETE', 'TAB', 'ESCAPE', 'DPAD_UP', 'DPAD_DOWN', 'DPAD_LEFT', 'DPAD_RIGHT',
  // Ctrl/⌘+A, C and X on the phone page: select all, copy and cut in the focused text field.
  'SELECT_ALL', 'COPY', 'CUT',
] as const;
export type Button = (typeof BUTTONS)[number];
export const ORIENTATIONS = ['portrait', 'landscape'] as const;
export type Orientation = (typeof ORIENTATIONS)[number];

/** One of a fixed list of strings, with the list as its static type. */
const oneOf = <T extends string>(values: readonly T[], options: { description?: string } = {}) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...options });

const Coordinate = Type.Integer({ minimum: 0, maximum: 20000 });
const Duration = Type.Optional(Type.Integer({ minimum: 1, maximum: 60000 }));
/** An Android package name or an iOS bundle id. */
const PackageName = Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_-]*(\\.[A-Za-z0-9_-]+)*$', maxLength: 255 });
const action = <K extends string, T extends Record<string, TSchema>>(type: K, fields: T) =>
  Type.Object({ type: Type.Literal(type), ...fields }, { additionalProperties: false });

export const DeviceActionBody = Type.Union([
  action('tap', { x: Coordinate, y: Coordinate }),
  action('doubleTap', { x: Coordinate, y: Coordinate }),
  action('longPress', { x: Coordinate, y: Coordinate, durationMs: Duration }),
  action('swipe', { fromX: Coordinate, fromY: Coordinate, toX: Coordinate, toY: Coordinate, durationMs: Duration }),
  action('typeText', { text: Type.String({ minLength: 1, maxLength: 4000 }) }),
  action('pressButton', { button: oneOf(BUTTONS) }),
  action('launchApp', { packageName: PackageName }),
  action('terminateApp', { packageName: PackageName }),
  action('uninstallApp', { packageName: PackageName }),
  action('clearAppData', { packageName: PackageName }),
  action('listApps', {}),
  action('foregroundApp', {}),
  action('openUrl', { url: Type.String({ minLength: 1, maxLength: 2000, pattern: '^[a-zA-Z][a-zA-Z0-9+.-]*:[^\\s]*$' }) }),
  action('setOrientation', { orientation: oneOf(ORIENTATIONS) }),
  action('getOrientation', {}),
  action('screenSize', {}),
]);
/** What the API, /ws, MCP, the assistant and the GUI can do to a phone. */
export type DeviceAction = Static<typeof DeviceActionBody>;

export const ActionResult = Type.Object({
  ok: Type.Boolean(),
  apps: Type.Optional(Type.Array(Type.String(), { description: 'listApps: the launchable apps\' package names' })),
  width: Type.Optional(Type.Integer({ description: 'screenSize' })),
  height: Type.Optional(Type.Integer({ description: 'screenSize' })),
  orientation: Type.Optional(oneOf(ORIENTATIONS, { description: 'getOrientation' })),
  packageName: Type.Optional(Type.String({ description: 'foregroundApp: the app in front, empty for the home screen' })),
});
export type ActionResult = Static<typeof ActionResult>;

/**
 * What the phone page's device panel shows: read from the phone itself (getprop, wm, dumpsys battery, settings), so
 * every field is what the phone says now. A value the phone did not report is null.
 */
export const DeviceInfo = Type.Object({
  serial: Type.String(),
  platform: Type.String(),
  manufacturer: Type.String(),
  model: Type.String(),
  osVersion: Type.String(),
  sdk: Type.Union([Type.Integer(), Type.Null()]),
  abi: Type.String({ description: 'The primary ABI, e.g. arm64-v8a' }),
  screen: Type.Object({
    width: Type.Union([Type.Integer(), Type.Null()]),
    height: Type.Union([Type.Integer(), Type.Null()]),
    density: Type.Union([Type.Integer(), Type.Null()]),
  }),
  battery: Type.Object({
    level: Type.Union([Type.Integer(), Type.Null()]),
    charging: Type.Union([Type.Boolean(), Type.Null()]),
  }),
  network: Type.Object({
    wifi: Type.Union([Type.Boolean(), Type.Null()]),
    airplaneMode: Type.Union([Type.Boolean(), Type.Null()]),
  }),
});
export type DeviceInfo = Static<typeof DeviceInfo>;

/** One line of the device's log (logcat on Android), the data of each `log` event of GET .../logs. */
export const LogLine = Type.Object({
  time: Type.String({ format: 'date-time', description: 'When the phone logged it, UTC.' }),
  level: oneOf(['verbose', 'debug', 'info', 'warn', 'error', 'fatal'] as const),
  tag: Type.String(),
  pid: Type.Integer(),
  message: Type.String(),
});
export type LogLine = Static<typeof LogLine>;

/** One entry of a folder on the phone, as adb's sync LIST (Android) reports it. */
export const PhoneFile = Type.Object({
  name: Type.String(),
  path: Type.String({ description: 'The absolute path on the phone.' }),
  type: oneOf(['file', 'directory', 'link'] as const),
  size: Type.Integer({ description: 'Bytes; 0 for a folder.' }),
  modifiedAt: Type.String({ format: 'date-time' }),
});
export type PhoneFile = Static<typeof PhoneFile>;

/** The folders of a phone a member may browse, read and write: the shared storage and adb's own scratch folder. */
export const PHONE_FILE_ROOTS = ['/sdcard', '/data/local/tmp'] as const;

/** Where an iPhone app's shared files are in its container, as house_arrest's VendDocuments opens it. */
export const APP_DOCUMENTS_ROOT = '/Documents';

export const PhonePathQuery = Type.Object({
  path: Type.String({ minLength: 1, maxLength: 1024, pattern: '^/', description: `An absolute path: on Android under ${PHONE_FILE_ROOTS.join(' or ')}; on an iPhone under ${APP_DOCUMENTS_ROOT} in the app's container.` }),
  app: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 255,
    pattern: '^[A-Za-z0-9.-]+$',
    description: 'iPhone only, and required there: the bundle id of the app whose Documents to reach (house_arrest). GET .../files/apps lists the apps that share them.',
  })),
});

/** An iPhone app that shares its Documents (UIFileSharingEnabled), which the file explorer can open. */
export const FileApp = Type.Object({
  packageName: Type.String({ description: 'The bundle id, the value of app= in .../files.' }),
  name: Type.String({ description: 'The app\'s name on the phone (CFBundleDisplayName).' }),
});
export type FileApp = Static<typeof FileApp>;

/** An app installed on the phone by someone (not part of its system image). */
export const PhoneApp = Type.Object({
  packageName: Type.String({ description: 'The Android package name or iOS bundle id.' }),
  label: Type.Optional(Type.String({ description: 'The app\'s name: as the phone names it (an iPhone\'s CFBundleDisplayName), else when a stored file of the organization carries it.' })),
  version: Type.Optional(Type.String({ description: 'The app\'s version where the phone says it (an iPhone: CFBundleShortVersionString, with the build in parentheses when it differs).' })),
});
export type PhoneApp = Static<typeof PhoneApp>;

export const Recording = Type.Object({
  startedAt: Type.String({ format: 'date-time' }),
  timeLimitSeconds: Type.Integer({ description: 'The phone stops recording by itself after this long (Android\'s screenrecord: 180 s).' }),
});
export type Recording = Static<typeof Recording>;
