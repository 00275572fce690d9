import AjvModule, { type ValidateFunction } from 'ajv';
import { Type, type Static, type TObject } from 'typebox';
import { BUTTONS, DeviceActionBody, ORIENTATIONS, type ActionResult, type Button, type DeviceAction, type UiElement } from '../../../../shared/api/devices.js';
import type { DeviceFilter } from '../../domain/device-filters.js';
import { ServiceError } from '../../domain/errors.js';
import { lazily } from '../../domain/lazily.js';
import type { Scope } from '../../services/scope.js';
import type { DeviceAllocationRow } from '../../store/devices.js';
import type { LogLine } from '../../../../shared/api/devices.js';
import type { McpLab } from './lab.js';

// ajv is CommonJS; its default export arrives wrapped under ESM.
const Ajv = (AjvModule as unknown as { default: typeof AjvModule }).default ?? AjvModule;
/**
 * Tool arguments are coerced as mobile-mcp's zod schemas coerce them (z.coerce.number()): agents send "120" as
 * often as 120. The action built from them is then checked against the shared vocabulary, as a REST body is.
 */
const ajv = new Ajv({ strict: false, coerceTypes: true, allErrors: true });
// Compiled on first use (lazily): compiling every tool's schema and the action union takes most of a second.
const validAction = lazily(() => new Ajv({ strict: false }).compile(DeviceActionBody));

/** What one tool call returns: MCP content blocks, isError when the call failed and the agent should change course. */
export interface ToolResult {
  [key: string]: unknown;
  content: ({ type: 'text'; text: string } | { type: 'image'; data: string; mimeType: string })[];
  isError?: boolean;
}

/** What an MCP session remembers between tool calls. */
export interface McpSessionState {
  /** The lab session per organization that this MCP session's allocations and instances live in. */
  labSessions: Map<string, string>;
  /** The elements each device listed last, so that a ref from that list can be clicked. */
  refs: Map<string, UiElement[]>;
}

export interface ToolCall {
  scope: Scope;
  lab: McpLab;
  state: McpSessionState;
  signal: AbortSignal;
  /** Where an unexpected failure is recorded: the agent gets a sentence, the lab owner the error. */
  log: (error: unknown) => void;
}

interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  openWorldHint?: boolean;
}

export interface McpTool {
  name: string;
  title: string;
  description: string;
  inputSchema: TObject;
  annotations: ToolAnnotations;
  call(call: ToolCall, args: Record<string, unknown>): Promise<ToolResult>;
}

/** An error that is the agent's to fix: its message says what to do next. */
class ToolFailure extends Error {}

const text = (t: string): ToolResult => ({ content: [{ type: 'text', text: t }] });
const json = (value: unknown): ToolResult => text(JSON.stringify(value));
export const failure = (message: string): ToolResult => ({ content: [{ type: 'text', text: message }], isError: true });

/**
 * `Args` is always its default, the schema's Static type (NoInfer leaves it no other source), so `run` is typed by the
 * schema as if it said `Static<S>`. Said that way, TypeScript worked out typebox's Static for the bare type parameter
 * while it inferred S: 4-6 s of every typecheck, on the first such call in the program.
 */
function tool<S extends TObject, Args = Static<S>>(
  name: string,
  title: string,
  description: string,
  inputSchema: S,
  annotations: ToolAnnotations,
  run: (call: ToolCall, args: NoInfer<Args>) => Promise<ToolResult | string>,
): McpTool {
  const validator = lazily((): ValidateFunction => ajv.compile(inputSchema));
  return {
    name,
    title,
    description,
    inputSchema,
    annotations,
    async call(call, raw) {
      // ajv coerces in place: the SDK's copy of the arguments stays as the client sent it.
      const args = structuredClone(raw);
      const validate = validator();
      if (!validate(args)) {
        const problems = (validate.errors ?? []).map((e) => `${e.instancePath.slice(1) || 'arguments'} ${e.message}`).join('; ');
        return failure(`Invalid arguments for ${name}: ${problems}. Fix them and call ${name} again.`);
      }
      try {
        const result = await run(call, args as Args);
        return typeof result === 'string' ? text(result) : result;
      } catch (error) {
        if (!(error instanceof ServiceError) && !(error instanceof ToolFailure)) call.log(error);
        return failure(explain(error, (args as { device?: string }).device));
      }
    },
  };
}

const NEXT_FOR_DEVICE = 'Call mobile_list_available_devices to see the phones your organization holds, or mobile_allocate_remote_device to take one.';

/** A service's error as a sentence that tells the agent what to do next. */
export function explain(error: unknown, device?: string): string {
  if (error instanceof ToolFailure) return error.message;
  if (!(error instanceof ServiceError)) {
    return 'Benchtop failed to complete this call unexpectedly (the error was logged). Try again; if it keeps failing, tell the lab owner.';
  }
  switch (error.code) {
    case 'device_not_found':
      return `No device "${device ?? ''}" is held by your organization. ${NEXT_FOR_DEVICE}`;
    case 'device_not_in_use':
      return `${error.message} Call mobile_list_available_devices to see its state; if it stays offline, release it with mobile_release_remote_device and allocate another.`;
    case 'device_error':
      return `${error.message} Take a screenshot (mobile_take_screenshot) to see the phone's state, then try again.`;
    case 'no_matching_device':
      return `${error.message} Call mobile_list_remote_devices to see the names and versions this lab has, then allocate with those.`;
    case 'concurrency_limit':
      return `${error.message} Release a phone you no longer need with mobile_release_remote_device (mobile_list_available_devices lists them).`;
    case 'insufficient_role':
      return `${error.message} Ask an admin of the organization for the readwrite role, or use an API key of an organization where you have it.`;
    case 'instance_not_found':
      return `${error.message} Allocate one with lab_allocate_mac_instance and use the id it returns.`;
    case 'test_result_not_found':
      return `${error.message} Call lab_list_test_results to see the ids.`;
    case 'file_not_found':
      return `${error.message} Call lab_list_files to see your organization's stored files and their ids.`;
  }
  switch (error.kind) {
    case 'invalid':
      return `${error.message} Fix the arguments and call again.`;
    case 'conflict':
      return `${error.message} Check the state with the matching list tool and try again.`;
    case 'not_found':
      return `${error.message} List what exists with the matching mobile_list_* or lab_list_* tool and use one of those ids.`;
    default:
      return error.message;
  }
}

// ---- argument schemas: mobile-mcp's names and descriptions ----

const Device = Type.String({ minLength: 1, maxLength: 200, description: 'The device identifier to use. Use mobile_list_available_devices to find which devices are available to you.' });
const Coordinate = (what: string) => Type.Number({ minimum: 0, maximum: 20000, description: what });
const Ref = Type.String({ maxLength: 20, description: 'An element\'s ref from the latest mobile_list_elements_on_screen of this device, instead of x and y: its center is used.' });
const PackageName = (what: string) => Type.String({ minLength: 1, maxLength: 255, description: what });

const target = (device: string) => ({ serial: device });

/** Builds an action and checks it against the shared vocabulary, as POST .../actions checks its body. */
function checked(action: DeviceAction): DeviceAction {
  // Not as a type guard: the action is typed already, and a failed guard would narrow it to never.
  const validate = validAction();
  if (!(validate(action) as boolean)) {
    const problems = (validate.errors ?? []).map((e) => `${e.instancePath.slice(1) || action.type} ${e.message}`).join('; ');
    throw new ToolFailure(`That is not a valid ${action.type}: ${problems}. Fix the arguments and call again.`);
  }
  return action;
}

const act = (call: ToolCall, device: string, action: DeviceAction): Promise<ActionResult> =>
  call.lab.control.act(call.scope, target(device), checked(action), call.signal);

/** The point to touch: x and y, rounded as mobile-mcp rounds them, or the center of a listed element. */
function pointOf(call: ToolCall, args: { device: string; x?: number; y?: number; ref?: string }): { x: number; y: number } {
  if (args.ref !== undefined) {
    const element = call.state.refs.get(args.device)?.[refIndex(args.ref)];
    if (!element) {
      throw new ToolFailure(`No element ${args.ref} on device "${args.device}": refs come from the latest mobile_list_elements_on_screen of that device. List the elements again and use a ref from that list.`);
    }
    const { x, y, width, height } = element.bounds;
    return { x: x + Math.floor(width / 2), y: y + Math.floor(height / 2) };
  }
  if (args.x === undefined || args.y === undefined) {
    throw new ToolFailure('Give both x and y (in pixels), or a ref from mobile_list_elements_on_screen.');
  }
  return { x: Math.round(args.x), y: Math.round(args.y) };
}

const refIndex = (ref: string) => (/^e\d+$/.test(ref) ? Number(ref.slice(1)) - 1 : -1);

/** Elements as mobile-mcp lists them (type, text, label, identifier, coordinates), plus the ref to click one by. */
function presentElement(e: UiElement, index: number) {
  return {
    ref: `e${index + 1}`,
    type: e.className,
    ...(e.text ? { text: e.text } : {}),
    ...(e.contentDescription ? { label: e.contentDescription } : {}),
    ...(e.resourceId ? { identifier: e.resourceId } : {}),
    ...(e.clickable ? { clickable: true } : {}),
    coordinates: { x: e.bounds.x, y: e.bounds.y, width: e.bounds.width, height: e.bounds.height },
  };
}

/** mobile-mcp's swipe geometry: 80% to 20% of the screen from its center, or `distance` (default 30%) from a point. */
async function swipeOf(call: ToolCall, args: { device: string; direction: 'up' | 'down' | 'left' | 'right'; x?: number; y?: number; distance?: number }): Promise<DeviceAction> {
  const size = await act(call, args.device, { type: 'screenSize' });
  const width = size.width ?? 0;
  const height = size.height ?? 0;
  const duration = 1000;
  if (args.x === undefined || args.y === undefined) {
    const cx = width >> 1;
    const cy = Math.floor(height * 0.5);
    const [lo, hi] = [0.2, 0.8];
    const at = (f: number, side: number) => Math.floor(side * f);
    switch (args.direction) {
      case 'up':
        return { type: 'swipe', fromX: cx, fromY: at(hi, height), toX: cx, toY: at(lo, height), durationMs: duration };
      case 'down':
        return { type: 'swipe', fromX: cx, fromY: at(lo, height), toX: cx, toY: at(hi, height), durationMs: duration };
      case 'left':
        return { type: 'swipe', fromX: at(hi, width), fromY: cy, toX: at(lo, width), toY: cy, durationMs: duration };
      default:
        return { type: 'swipe', fromX: at(lo, width), fromY: cy, toX: at(hi, width), toY: cy, durationMs: duration };
    }
  }
  const x = Math.round(args.x);
  const y = Math.round(args.y);
  const dy = Math.round(args.distance ?? height * 0.3);
  const dx = Math.round(args.distance ?? width * 0.3);
  switch (args.direction) {
    case 'up':
      return { type: 'swipe', fromX: x, fromY: y, toX: x, toY: Math.max(0, y - dy), durationMs: duration };
    case 'down':
      return { type: 'swipe', fromX: x, fromY: y, toX: x, toY: Math.min(height, y + dy), durationMs: duration };
    case 'left':
      return { type: 'swipe', fromX: x, fromY: y, toX: Math.max(0, x - dx), toY: y, durationMs: duration };
    default:
      return { type: 'swipe', fromX: x, fromY: y, toX: Math.min(width, x + dx), toY: y, durationMs: duration };
  }
}

// ---- allocation ----

/** mobile-mcp's filters (as mobilecli's remote allocate takes them) in the API's filter vocabulary. */
function filtersOf(args: { platform: string; name?: string; version?: string[]; type?: string }): DeviceFilter[] {
  const filters: DeviceFilter[] = [{ attribute: 'platform', operator: 'EQUALS', value: args.platform }];
  if (args.name) {
    filters.push(args.name.endsWith('*')
      ? { attribute: 'name', operator: 'STARTS_WITH', value: args.name.slice(0, -1) }
      : { attribute: 'name', operator: 'EQUALS', value: args.name });
  }
  const OPERATORS: [string, string][] = [['>=', 'GREATER_THAN_OR_EQUALS'], ['<=', 'LESS_THAN_OR_EQUALS'], ['>', 'GREATER_THAN'], ['<', 'LESS_THAN']];
  for (const version of args.version ?? []) {
    const [prefix, operator] = OPERATORS.find(([p]) => version.startsWith(p)) ?? ['', 'EQUALS'];
    filters.push({ attribute: 'version', operator, value: version.slice(prefix.length).trim() });
  }
  if (args.type) filters.push({ attribute: 'type', operator: 'EQUALS', value: args.type });
  return filters;
}

/** The lab session this MCP session keeps its allocations in, for the organization of this call. */
function labSessionOf(call: ToolCall): string {
  const org = call.scope.organization.id;
  let id = call.state.labSessions.get(org);
  if (!id) {
    id = call.lab.createSession(call.scope);
    call.state.labSessions.set(org, id);
  }
  return id;
}

const POLL_MS = 100;

/** Polls until `done` says so, the timeout passes, or the call is cancelled. */
async function until<T>(signal: AbortSignal, timeoutMs: number, check: () => T | undefined): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined || Date.now() >= deadline || signal.aborted) return value;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

const presentHeld = (d: DeviceAllocationRow) => ({
  id: d.serial,
  name: d.name,
  platform: d.platform,
  type: d.type ?? 'real',
  version: d.osVersion,
  state: d.status === 'in_use' ? 'online' : 'offline',
  status: d.status,
  sessionId: d.sessionId,
});

// ---- logs ----

const LOG_WINDOW_MS = 1000;

async function recentLogs(call: ToolCall, device: string, lines: number): Promise<LogLine[]> {
  const logs = call.lab.control.logs(call.scope, target(device));
  // The stream starts with what the phone has buffered; what arrives in a short window is "recent".
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), LOG_WINDOW_MS);
  const abort = () => stop.abort();
  call.signal.addEventListener('abort', abort);
  const seen: LogLine[] = [];
  try {
    for await (const line of logs.lines(stop.signal)) {
      seen.push(line);
      if (seen.length > lines) seen.shift();
    }
  } catch (error) {
    if (!stop.signal.aborted) throw error;
  } finally {
    clearTimeout(timer);
    call.signal.removeEventListener('abort', abort);
  }
  return seen;
}

// ---- the tools ----

const READ = { readOnlyHint: true, openWorldHint: true };
const WRITE = { readOnlyHint: false, destructiveHint: false, openWorldHint: true };

export const TOOLS: McpTool[] = [
  tool(
    'mobile_list_available_devices',
    'List Devices',
    'List the devices your organization holds in this lab, ready to use with the other mobile_* tools (state online) or ' +
      'waiting to come back (offline). To take another phone from the lab, use mobile_list_remote_devices and mobile_allocate_remote_device.',
    Type.Object({}),
    { readOnlyHint: true, openWorldHint: false },
    async (call) => json({ devices: call.lab.devices.held(call.scope).filter((d) => d.serial !== null).map(presentHeld) }),
  ),
  tool(
    'mobile_list_remote_devices',
    'List Remote Devices',
    'List every phone of the lab (make, platform, OS version) and whether it is free. Free phones can be reserved with ' +
      'mobile_allocate_remote_device; a held one shows its sessionId only when your organization holds it.',
    Type.Object({}),
    READ,
    async (call) => json({
      devices: call.lab.devices.fleet(call.scope).map((d) => ({
        id: d.serial,
        name: d.name,
        platform: d.platform,
        type: d.type,
        version: d.osVersion,
        state: d.state === 'device' ? 'online' : 'offline',
        available: d.state === 'device' && !d.held,
        ...(d.heldBy ? { heldByYou: d.heldBy } : {}),
      })),
    }),
  ),
  tool(
    'mobile_allocate_remote_device',
    'Allocate Remote Device',
    'Reserve a phone of the lab for exclusive use, returning a device identifier (its serial) usable with the other mobile_* tools. ' +
      'Use mobile_list_remote_devices first to see which names and versions exist. It waits until the phone is ready unless wait is false. ' +
      'Release the device with mobile_release_remote_device once the whole task is finished - releasing wipes the apps installed during the session.',
    Type.Object({
      platform: Type.Union([Type.Literal('ios'), Type.Literal('android')], { description: 'The platform to allocate a device for' }),
      name: Type.Optional(Type.String({ maxLength: 200, description: 'Filter by device name/model. Supports a trailing * for prefix match (e.g. "Pixel*"), or an exact name (e.g. "Pixel 7").' })),
      version: Type.Optional(Type.Array(Type.String({ maxLength: 50 }), { maxItems: 10, description: 'Filter by OS version. Supports comparison prefixes >=, >, <=, < (e.g. ">=14"), or an exact version (e.g. "14"). Multiple values are ANDed together.' })),
      type: Type.Optional(Type.Literal('real', { description: 'Device type filter. Only "real" (physical devices) is supported.' })),
      wait: Type.Optional(Type.Boolean({ description: 'Whether to wait until the device is ready (default true). If false, this returns at once with its status.' })),
      timeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 900, description: 'Seconds to wait for the device (default 120).' })),
    }),
    WRITE,
    async (call, args) => {
      const sessionId = labSessionOf(call);
      const row = call.lab.devices.allocate(call.scope, sessionId, { filters: filtersOf(args) });
      const describe = (d: DeviceAllocationRow) => ({ device: d.serial, status: d.status, name: d.name, platform: d.platform, version: d.osVersion, sessionId: d.sessionId, allocationId: d.id });
      if (args.wait === false) return json(describe(row));
      const settled = await until(call.signal, (args.timeoutSeconds ?? 120) * 1000, () => {
        const d = call.lab.devices.find(call.scope, sessionId, row.id);
        return d.status === 'in_use' || d.status === 'released' ? d : undefined;
      });
      if (!settled) {
        const now = call.lab.devices.find(call.scope, sessionId, row.id);
        return failure(`The device is still ${now.status} (allocation ${row.id}): every matching phone is busy or being prepared. ` +
          'Call mobile_list_available_devices later to see when it is online, or mobile_release_remote_device with its allocation id to give up.');
      }
      if (settled.status === 'released') {
        return failure(`The allocation failed (${settled.releaseReason ?? 'released'}) before the phone was ready. Try mobile_allocate_remote_device again, or with other filters.`);
      }
      return json(describe(settled));
    },
  ),
  tool(
    'mobile_release_remote_device',
    'Release Remote Device',
    'Release a device previously reserved with mobile_allocate_remote_device back to the lab so it becomes available to others. ' +
      'Releasing uninstalls the apps installed during this session. Only release once the whole task is finished.',
    Type.Object({ device: Type.String({ minLength: 1, maxLength: 200, description: 'The device identifier to release back to the lab' }) }),
    { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
    async (call, { device }) => {
      const row = call.lab.devices.held(call.scope).find((d) => d.serial === device || d.id === device);
      if (!row) throw new ServiceError('not_found', 'device_not_found', 'No device with that id.');
      const released = call.lab.devices.release(call.scope, row.sessionId, row.serial ?? row.id);
      call.state.refs.delete(device);
      return `Released device ${released.serial ?? released.id}.`;
    },
  ),
  tool(
    'mobile_take_screenshot',
    'Take Screenshot',
    'Take a screenshot of the mobile device. Use this to understand what\'s on screen, if you need to press an element that is available through view hierarchy then you must list elements on screen instead. Do not cache this result.',
    Type.Object({ device: Device }),
    READ,
    async (call, { device }) => {
      // mobile-mcp scales a screenshot by the screen's scale so that one image pixel is one unit of the coordinates
      // the click tools take. Android taps are in pixels (scale 1): the frame goes as captured, PNG from screencap or
      // JPEG from the live feed, with no re-encoding on the way.
      const frame = await call.lab.control.screenshot(call.scope, target(device));
      return { content: [{ type: 'image', data: frame.data.toString('base64'), mimeType: `image/${frame.format}` }] };
    },
  ),
  tool(
    'mobile_list_elements_on_screen',
    'List Screen Elements',
    'List elements on screen and their coordinates, with display text or accessibility label, and a ref for each that mobile_click_on_screen_at_coordinates takes instead of x and y. Do not cache this result.',
    Type.Object({ device: Device }),
    READ,
    async (call, { device }) => {
      const elements = await call.lab.control.elements(call.scope, target(device));
      call.state.refs.set(device, elements);
      return `Found these elements on screen: ${JSON.stringify(elements.map(presentElement))}`;
    },
  ),
  tool(
    'mobile_click_on_screen_at_coordinates',
    'Click Screen',
    'Click on the screen at given x,y coordinates, or on an element by its ref. If clicking on an element, use the mobile_list_elements_on_screen tool to find the coordinates or ref.',
    Type.Object({ device: Device, x: Type.Optional(Coordinate('The x coordinate to click on the screen, in pixels')), y: Type.Optional(Coordinate('The y coordinate to click on the screen, in pixels')), ref: Type.Optional(Ref) }),
    WRITE,
    async (call, args) => {
      const { x, y } = pointOf(call, args);
      await act(call, args.device, { type: 'tap', x, y });
      return `Clicked on screen at coordinates: ${x}, ${y}`;
    },
  ),
  tool(
    'mobile_double_tap_on_screen',
    'Double Tap Screen',
    'Double-tap on the screen at given x,y coordinates, or on an element by its ref.',
    Type.Object({ device: Device, x: Type.Optional(Coordinate('The x coordinate to double-tap, in pixels')), y: Type.Optional(Coordinate('The y coordinate to double-tap, in pixels')), ref: Type.Optional(Ref) }),
    WRITE,
    async (call, args) => {
      const { x, y } = pointOf(call, args);
      await act(call, args.device, { type: 'doubleTap', x, y });
      return `Double-tapped on screen at coordinates: ${x}, ${y}`;
    },
  ),
  tool(
    'mobile_long_press_on_screen_at_coordinates',
    'Long Press Screen',
    'Long press on the screen at given x,y coordinates, or on an element by its ref. If long pressing on an element, use the mobile_list_elements_on_screen tool to find the coordinates.',
    Type.Object({
      device: Device,
      x: Type.Optional(Coordinate('The x coordinate to long press on the screen, in pixels')),
      y: Type.Optional(Coordinate('The y coordinate to long press on the screen, in pixels')),
      ref: Type.Optional(Ref),
      duration: Type.Optional(Type.Number({ minimum: 1, maximum: 10000, description: 'Duration of the long press in milliseconds. Defaults to 500ms.' })),
    }),
    WRITE,
    async (call, args) => {
      const { x, y } = pointOf(call, args);
      const duration = Math.round(args.duration ?? 500);
      await act(call, args.device, { type: 'longPress', x, y, durationMs: duration });
      return `Long pressed on screen at coordinates: ${x}, ${y} for ${duration}ms`;
    },
  ),
  tool(
    'mobile_swipe_on_screen',
    'Swipe Screen',
    'Swipe on the screen',
    Type.Object({
      device: Device,
      direction: Type.Union([Type.Literal('up'), Type.Literal('down'), Type.Literal('left'), Type.Literal('right')], { description: 'The direction to swipe' }),
      x: Type.Optional(Coordinate('The x coordinate to start the swipe from, in pixels. If not provided, uses center of screen')),
      y: Type.Optional(Coordinate('The y coordinate to start the swipe from, in pixels. If not provided, uses center of screen')),
      distance: Type.Optional(Type.Number({ minimum: 1, maximum: 20000, description: 'The distance to swipe in pixels. Defaults to 30% of screen dimension' })),
    }),
    WRITE,
    async (call, args) => {
      await act(call, args.device, await swipeOf(call, args));
      if (args.x !== undefined && args.y !== undefined) {
        return `Swiped ${args.direction}${args.distance ? ` ${args.distance} pixels` : ''} from coordinates: ${Math.round(args.x)}, ${Math.round(args.y)}`;
      }
      return `Swiped ${args.direction} on screen`;
    },
  ),
  tool(
    'mobile_type_keys',
    'Type Text',
    'Type text into the focused element',
    Type.Object({
      device: Device,
      text: Type.String({ description: 'The text to type' }),
      submit: Type.Boolean({ description: 'Whether to submit the text. If true, the text will be submitted as if the user pressed the enter key.' }),
    }),
    WRITE,
    async (call, { device, text: typed, submit }) => {
      await act(call, device, { type: 'typeText', text: typed });
      if (submit) await act(call, device, { type: 'pressButton', button: 'ENTER' });
      return `Typed text: ${typed}`;
    },
  ),
  tool(
    'mobile_press_button',
    'Press Button',
    'Press a button on device',
    Type.Object({ device: Device, button: Type.String({ maxLength: 50, description: `The button to press. Supported buttons: ${BUTTONS.join(', ')}` }) }),
    WRITE,
    async (call, { device, button }) => {
      const name = button.toUpperCase();
      if (!(BUTTONS as readonly string[]).includes(name)) {
        throw new ToolFailure(`Unknown button "${button}". Use one of: ${BUTTONS.join(', ')}.`);
      }
      await act(call, device, { type: 'pressButton', button: name as Button });
      return `Pressed the button: ${name}`;
    },
  ),
  tool(
    'mobile_open_url',
    'Open URL',
    'Open a URL in browser on device',
    Type.Object({ device: Device, url: Type.String({ description: 'The URL to open' }) }),
    WRITE,
    async (call, { device, url }) => {
      await act(call, device, { type: 'openUrl', url });
      return `Opened URL: ${url}`;
    },
  ),
  tool(
    'mobile_launch_app',
    'Launch App',
    'Launch an app on mobile device. Use this to open a specific app. You can find the package name of the app by calling mobile_list_apps.',
    Type.Object({
      device: Device,
      packageName: PackageName('The package name of the app to launch'),
      locale: Type.Optional(Type.String({ maxLength: 200, description: 'Comma-separated BCP 47 locale tags to launch the app with (e.g., fr-FR,en-GB). Not supported by this lab: the app launches in the phone\'s locale.' })),
    }),
    WRITE,
    async (call, { device, packageName, locale }) => {
      await act(call, device, { type: 'launchApp', packageName });
      return `Launched app ${packageName}${locale ? ` (in the phone's own locale: this lab does not set ${locale})` : ''}`;
    },
  ),
  tool(
    'mobile_terminate_app',
    'Terminate App',
    'Stop and terminate an app on mobile device',
    Type.Object({ device: Device, packageName: PackageName('The package name of the app to terminate') }),
    { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    async (call, { device, packageName }) => {
      await act(call, device, { type: 'terminateApp', packageName });
      return `Terminated app ${packageName}`;
    },
  ),
  tool(
    'mobile_list_apps',
    'List Apps',
    'List all the installed apps on the device',
    Type.Object({ device: Device }),
    { readOnlyHint: true, openWorldHint: false },
    async (call, { device }) => {
      const { apps = [] } = await act(call, device, { type: 'listApps' });
      return `Found these apps on device: ${apps.join(', ')}`;
    },
  ),
  tool(
    'mobile_install_app',
    'Install App',
    'Install an app on mobile device from the lab\'s stored files. The lab cannot read paths on your machine: upload the app with POST /api/v1/files (or the GUI) and pass its file id; lab_list_files lists them.',
    Type.Object({ device: Device, path: Type.String({ minLength: 1, maxLength: 100, description: 'The stored file\'s id (or file:<id>), from lab_list_files. An .apk for Android, an .ipa for iOS.' }) }),
    { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    async (call, { device, path }) => {
      const result = await call.lab.control.install(call.scope, target(device), { file: path });
      return `Installed app ${result.bundleId} from ${path}`;
    },
  ),
  tool(
    'mobile_uninstall_app',
    'Uninstall App',
    'Uninstall an app from mobile device',
    Type.Object({ device: Device, bundle_id: PackageName('Bundle identifier (iOS) or package name (Android) of the app to be uninstalled') }),
    { readOnlyHint: false, destructiveHint: true, openWorldHint: false },
    async (call, { device, bundle_id }) => {
      await act(call, device, { type: 'uninstallApp', packageName: bundle_id });
      return `Uninstalled app ${bundle_id}`;
    },
  ),
  tool(
    'mobile_get_screen_size',
    'Get Screen Size',
    'Get the screen size of the mobile device in pixels',
    Type.Object({ device: Device }),
    { readOnlyHint: true, openWorldHint: false },
    async (call, { device }) => {
      const { width, height } = await act(call, device, { type: 'screenSize' });
      return `Screen size is ${width}x${height} pixels`;
    },
  ),
  tool(
    'mobile_set_orientation',
    'Set Orientation',
    'Change the screen orientation of the device',
    Type.Object({ device: Device, orientation: Type.Union(ORIENTATIONS.map((o) => Type.Literal(o)), { description: 'The desired orientation' }) }),
    { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    async (call, { device, orientation }) => {
      await act(call, device, { type: 'setOrientation', orientation });
      return `Changed device orientation to ${orientation}`;
    },
  ),
  tool(
    'mobile_get_orientation',
    'Get Orientation',
    'Get the current screen orientation of the device',
    Type.Object({ device: Device }),
    { readOnlyHint: true, openWorldHint: false },
    async (call, { device }) => {
      const { orientation } = await act(call, device, { type: 'getOrientation' });
      return `Current device orientation is ${orientation}`;
    },
  ),
  tool(
    'lab_restart_device',
    'Restart Device',
    'Restart the device, as its power menu would. It stays allocated to you while it restarts; this answers once it is back and ready, which takes a minute or two on a real phone. Apps that were open are closed.',
    Type.Object({ device: Device }),
    { readOnlyHint: false, destructiveHint: true, openWorldHint: false },
    async (call, { device }) => {
      await call.lab.control.restart(call.scope, target(device));
      return `Restarted device ${device}; it is back and ready`;
    },
  ),
  tool(
    'mobile_get_device_logs',
    'Get Device Logs',
    'Get the device\'s most recent log lines (logcat on Android, syslog on iOS), oldest first, each with its time, level, tag, pid and message.',
    Type.Object({ device: Device, lines: Type.Optional(Type.Integer({ minimum: 1, maximum: 2000, description: 'How many of the most recent lines to return (default 200).' })) }),
    READ,
    async (call, { device, lines }) => json({ lines: await recentLogs(call, device, lines ?? 200) }),
  ),

  // ---- the lab's own tools ----

  tool(
    'lab_allocate_mac_instance',
    'Allocate Mac Instance',
    'Take a macOS build instance (a VM on one of the lab\'s Macs) for running commands with lab_exec_on_mac_instance. It waits until the instance is ready unless wait is false. Release it with lab_release_mac_instance when done: instances are billed while held.',
    Type.Object({
      wait: Type.Optional(Type.Boolean({ description: 'Whether to wait until the instance is ready (default true).' })),
      timeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 1800, description: 'Seconds to wait (default 600).' })),
    }),
    WRITE,
    async (call, args) => {
      const created = call.lab.instances.create(call.scope, labSessionOf(call));
      if (args.wait === false) return json(created);
      const settled = await until(call.signal, (args.timeoutSeconds ?? 600) * 1000, () => {
        const i = call.lab.instances.get(call.scope, created.id);
        return i.status === 'provisioning' ? undefined : i;
      });
      if (!settled) return failure(`Instance ${created.id} is still provisioning. Call lab_exec_on_mac_instance once it is ready, or lab_release_mac_instance to give up.`);
      if (settled.status !== 'ready') return failure(`Instance ${created.id} ${settled.status} before it was ready. Try lab_allocate_mac_instance again, or ask the lab owner to check the Mac hosts.`);
      return json(settled);
    },
  ),
  tool(
    'lab_exec_on_mac_instance',
    'Run Command on Mac Instance',
    'Run a shell command on a ready Mac instance of your organization and return its exit code, stdout and stderr.',
    Type.Object({
      instance: Type.String({ minLength: 1, maxLength: 100, description: 'The instance id from lab_allocate_mac_instance' }),
      command: Type.String({ minLength: 1, maxLength: 100_000, description: 'The command, run by the instance\'s login shell' }),
      timeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600, description: 'Seconds before the command is stopped (default 60)' })),
    }),
    WRITE,
    async (call, { instance, command, timeoutSeconds }) => json(await call.lab.instances.exec(call.scope, instance, { command, timeoutSeconds })),
  ),
  tool(
    'lab_release_mac_instance',
    'Release Mac Instance',
    'Release a Mac instance: billing stops and the VM is deleted with everything on it.',
    Type.Object({ instance: Type.String({ minLength: 1, maxLength: 100, description: 'The instance id' }) }),
    { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
    async (call, { instance }) => json(call.lab.instances.release(call.scope, instance)),
  ),
  tool(
    'lab_list_test_results',
    'List Test Results',
    'List your organization\'s test results, newest first: name, status, stats, git and the session they ran in.',
    Type.Object({
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'How many (default 20)' })),
      status: Type.Optional(Type.String({ maxLength: 20, description: 'Only those with this status (passed, failed, running, ...)' })),
      sessionId: Type.Optional(Type.String({ maxLength: 100, description: 'Only those of this session' })),
    }),
    { readOnlyHint: true, openWorldHint: false },
    async (call, args) => json({ testResults: call.lab.testResults.list(call.scope, { limit: args.limit ?? 20, status: args.status, sessionId: args.sessionId }) }),
  ),
  tool(
    'lab_get_test_result',
    'Get Test Result',
    'Read one test result with its assets (screenshots, videos, logs, reports): each asset\'s name, content type, size and the API path to download it.',
    Type.Object({ id: Type.String({ minLength: 1, maxLength: 100, description: 'The test result id' }) }),
    { readOnlyHint: true, openWorldHint: false },
    async (call, { id }) => {
      const { testResult, assets } = call.lab.testResults.get(call.scope, id);
      return json({ ...testResult, assets: assets.map((a) => ({ ...a, download: `/api/v1/test-results/${testResult.id}/assets/${a.id}` })) });
    },
  ),
  tool(
    'lab_list_files',
    'List Stored Files',
    'List your organization\'s stored files (app binaries), newest first. A ready file\'s id is what mobile_install_app takes.',
    Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'How many (default 50)' })) }),
    { readOnlyHint: true, openWorldHint: false },
    async (call, { limit }) => json({ files: call.lab.files.list(call.scope, limit ?? 50) }),
  ),
  tool(
    'lab_list_apps',
    'List Stored Apps',
    'List your organization\'s apps (ready stored files grouped by platform and bundle id) with their files, newest first.',
    Type.Object({
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'How many (default 50)' })),
      platform: Type.Optional(Type.Union([Type.Literal('android'), Type.Literal('ios')], { description: 'Only apps of this platform' })),
    }),
    { readOnlyHint: true, openWorldHint: false },
    async (call, { limit, platform }) => json({ apps: call.lab.files.apps(call.scope, { limit: limit ?? 50, platform }) }),
  ),
];

export const TOOLS_BY_NAME = new Map(TOOLS.map((t) => [t.name, t]));
