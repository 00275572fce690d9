import { Type, type Static } from 'typebox';

export const DeviceFilter = Type.Object(
  {
    attribute: Type.String({ description: 'platform, type, name or version', maxLength: 50 }),
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
  state: Type.String({ description: 'device, unauthorized, offline, or gone (not attached now)' }),
  battery: Type.Union([Type.Integer(), Type.Null()]),
  held: Type.Boolean({ description: 'Whether an allocation holds it (or it is being cleaned after one).' }),
  heldBy: Type.Optional(
    Type.Object(
      { sessionId: Type.String(), allocationId: Type.String() },
      { description: 'Present only when your own organization holds it.' },
    ),
  ),
  lastSeenAt: Type.String({ format: 'date-time' }),
});
export type FleetDevice = Static<typeof FleetDevice>;

export const UiElement = Type.Object({
  text: Type.String(),
  contentDescription: Type.String(),
  resourceId: Type.String(),
  className: Type.String(),
  bounds: Type.Object({ x: Type.Integer(), y: Type.Integer(), width: Type.Integer(), height: Type.Integer() }),
  clickable: Type.Boolean(),
});

const Coordinate = Type.Integer({ minimum: 0, maximum: 20000 });
const Duration = Type.Optional(Type.Integer({ minimum: 1, maximum: 60000 }));
const PackageName = Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_]*(\\.[A-Za-z0-9_]+)*$', maxLength: 255 });
const action = <T extends Record<string, import('typebox').TSchema>>(type: string, fields: T) =>
  Type.Object({ type: Type.Literal(type), ...fields }, { additionalProperties: false });

export const DeviceActionBody = Type.Union([
  action('tap', { x: Coordinate, y: Coordinate }),
  action('longPress', { x: Coordinate, y: Coordinate, durationMs: Duration }),
  action('swipe', { fromX: Coordinate, fromY: Coordinate, toX: Coordinate, toY: Coordinate, durationMs: Duration }),
  action('typeText', { text: Type.String({ minLength: 1, maxLength: 4000 }) }),
  action('pressButton', {
    button: Type.Union(['HOME', 'BACK', 'ENTER', 'VOLUME_UP', 'VOLUME_DOWN', 'POWER', 'APP_SWITCH'].map((b) => Type.Literal(b))),
  }),
  action('launchApp', { packageName: PackageName }),
  action('terminateApp', { packageName: PackageName }),
  action('listApps', {}),
  action('openUrl', { url: Type.String({ minLength: 1, maxLength: 2000, pattern: '^[a-zA-Z][a-zA-Z0-9+.-]*:[^\\s]*$' }) }),
  action('setOrientation', { orientation: Type.Union([Type.Literal('portrait'), Type.Literal('landscape')]) }),
  action('screenSize', {}),
]);

export const ActionResult = Type.Object({
  ok: Type.Boolean(),
  apps: Type.Optional(Type.Array(Type.String())),
  width: Type.Optional(Type.Integer()),
  height: Type.Optional(Type.Integer()),
});

/** One line of the device's log (logcat on Android), the data of each `log` event of GET .../logs. */
export const LogLine = Type.Object({
  time: Type.String({ format: 'date-time', description: 'When the phone logged it, UTC.' }),
  level: Type.Union(['verbose', 'debug', 'info', 'warn', 'error', 'fatal'].map((l) => Type.Literal(l))),
  tag: Type.String(),
  pid: Type.Integer(),
  message: Type.String(),
});
export type LogLine = Static<typeof LogLine>;
