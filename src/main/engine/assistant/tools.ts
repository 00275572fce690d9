import AjvModule from 'ajv';
import { lazily } from '../domain/lazily.js';
import { BUTTONS, DeviceActionBody, type ActionResult, type DeviceAction, type UiElement } from '../../../shared/api/devices.js';

// ajv is CommonJS; its default export arrives wrapped under ESM.
const Ajv = (AjvModule as unknown as { default: typeof AjvModule }).default ?? AjvModule;
/** The same rules as POST .../actions: a model's arguments are as untrusted as any request body. Compiled on first use. */
const validAction = lazily(() => new Ajv({ strict: false }).compile(DeviceActionBody));

/** A tool as a model sees it: a name, what it does, and a JSON schema of its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: { type: 'object'; properties: Record<string, unknown>; required?: string[]; additionalProperties: false };
}

/** What a tool call produced: the result stored on the tool call, and what goes back to the model. */
export interface ToolOutcome {
  result: unknown;
  forModel: string;
  /** An image for the model: only the screenshot tool returns one, so images go to the model only when it asks. */
  image?: ToolImage;
}

export class ToolError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface ToolImage {
  data: Buffer;
  mimeType: 'image/png' | 'image/jpeg';
}

/**
 * The chat's device through the device-control core, authorized for the caller on every call, and where a
 * screenshot is kept for the GUI.
 */
export interface DeviceAccess {
  /** What the phone is, for the model's instructions: an iPhone has other buttons and names its apps by bundle id. */
  phone?: { platform: string; name: string; osVersion: string };
  screenshot(): Promise<ToolImage>;
  elements(): Promise<UiElement[]>;
  act(action: DeviceAction, signal: AbortSignal): Promise<ActionResult>;
  /** Keeps a screenshot where the GUI can fetch it, under the tool call that took it. */
  saveImage(image: ToolImage, toolCallId: string): Promise<{ url: string; contentType: ToolImage['mimeType']; sha256: string }>;
}

const int = (description: string) => ({ type: 'integer', minimum: 0, description });
const object = (properties: Record<string, unknown>, required: string[] = []): ToolSpec['parameters'] => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});
const PACKAGE = { type: 'string', description: 'Android package name or iOS bundle id, e.g. com.android.settings or com.apple.Preferences' };

/** Device actions as tools: one tool per action of the device-control API, with its argument names. */
const ACTIONS: Record<string, { spec: Omit<ToolSpec, 'name'>; action: DeviceAction['type'] }> = {
  tap: { action: 'tap', spec: { description: 'Tap the screen at pixel coordinates (use the center of an element\'s bounds).', parameters: object({ x: int('x in pixels'), y: int('y in pixels') }, ['x', 'y']) } },
  long_press: { action: 'longPress', spec: { description: 'Long-press the screen at pixel coordinates.', parameters: object({ x: int('x in pixels'), y: int('y in pixels'), durationMs: int('how long to hold, default 800') }, ['x', 'y']) } },
  swipe: { action: 'swipe', spec: { description: 'Swipe from one point to another (to scroll, swipe up to see content further down).', parameters: object({ fromX: int('start x'), fromY: int('start y'), toX: int('end x'), toY: int('end y'), durationMs: int('default 300') }, ['fromX', 'fromY', 'toX', 'toY']) } },
  type_text: { action: 'typeText', spec: { description: 'Type text into the focused field.', parameters: object({ text: { type: 'string' } }, ['text']) } },
  press_button: { action: 'pressButton', spec: { description: 'Press a hardware or navigation button.', parameters: object({ button: { type: 'string', enum: [...BUTTONS] } }, ['button']) } },
  launch_app: { action: 'launchApp', spec: { description: 'Launch an installed app by package name.', parameters: object({ packageName: PACKAGE }, ['packageName']) } },
  terminate_app: { action: 'terminateApp', spec: { description: 'Force-stop an app by package name.', parameters: object({ packageName: PACKAGE }, ['packageName']) } },
  list_apps: { action: 'listApps', spec: { description: 'List the installed apps\' package names.', parameters: object({}) } },
  open_url: { action: 'openUrl', spec: { description: 'Open a URL (or deep link) on the device.', parameters: object({ url: { type: 'string' } }, ['url']) } },
  screen_size: { action: 'screenSize', spec: { description: 'The screen size in pixels.', parameters: object({}) } },
};

/** Every tool the assistant has while its chat is bound to a device. */
export const DEVICE_TOOLS: ToolSpec[] = [
  {
    name: 'list_elements',
    description: 'List the UI elements on screen with their text, label, id and bounds in pixels. Prefer this over a screenshot.',
    parameters: object({}),
  },
  {
    name: 'screenshot',
    description: 'Take a screenshot and look at it. Use only when the element list is not enough.',
    parameters: object({}),
  },
  ...Object.entries(ACTIONS).map(([name, { spec }]) => ({ name, ...spec })),
];

/** An element worth showing: one with something to read or to tap. Layout containers add only noise. */
const meaningful = (e: UiElement) => e.text !== '' || e.contentDescription !== '' || e.clickable;

/** Runs one tool on the device. Throws ToolError for a bad call; a failing phone throws what the driver threw. */
export async function runTool(device: DeviceAccess, name: string, args: Record<string, unknown>, toolCallId: string, signal: AbortSignal): Promise<ToolOutcome> {
  if (name === 'list_elements') {
    const elements = (await device.elements()).filter(meaningful);
    const forModel = elements.map((e) => {
      const b = e.bounds;
      const label = [e.text && `"${e.text}"`, e.contentDescription && `label "${e.contentDescription}"`, e.resourceId && `id ${e.resourceId}`]
        .filter(Boolean)
        .join(', ');
      return `${e.className.split('.').pop()} ${label} at (${b.x + Math.round(b.width / 2)}, ${b.y + Math.round(b.height / 2)}) size ${b.width}x${b.height}${e.clickable ? ' clickable' : ''}`;
    });
    return { result: { elements }, forModel: forModel.length > 0 ? forModel.join('\n') : 'No elements on screen.' };
  }
  if (name === 'screenshot') {
    const image = await device.screenshot();
    return { result: { image: await device.saveImage(image, toolCallId) }, forModel: 'The screenshot is attached.', image };
  }
  const tool = ACTIONS[name];
  if (!tool) throw new ToolError('unknown_tool', `There is no tool named ${JSON.stringify(name)}.`);
  const action = { ...args, type: tool.action };
  const validate = validAction();
  if (!validate(action)) {
    throw new ToolError('invalid_arguments', `Invalid arguments for ${name}: ${validate.errors?.[0]?.instancePath || '/'} ${validate.errors?.[0]?.message ?? ''}.`);
  }
  const result = await device.act(action as DeviceAction, signal);
  return { result, forModel: JSON.stringify(result) };
}
