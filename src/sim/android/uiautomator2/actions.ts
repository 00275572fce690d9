import { setTimeout as delay } from 'node:timers/promises';
import type { Device } from '../device.js';
import type { Screen } from '../screen.js';

/**
 * W3C actions (POST /actions), performed as the server's W3CActions handler injects them: in real time, each pointer's
 * finger down to finger up becoming one gesture. The gesture goes through the same Screen.tap/swipe as `input tap` and
 * `input swipe`, so a tap from Appium and a tap on the live screen cannot act differently.
 */

export class ActionsError extends Error {}

interface Point {
  x: number;
  y: number;
}

/** An element origin resolved to its centre, in screen pixels. */
export type ElementCenter = (ref: Record<string, unknown>) => Point;

/** The most one action sequence may take, so a client's typo cannot hold the connection for an hour. */
const MAX_SEQUENCE_MS = 30_000;

/** WebDriver's key codepoints that have an Android key: Backspace, Tab, Enter (both), Escape, Delete, arrows. */
const SPECIAL_KEYS: Record<string, number> = {
  '\uE003': 67,
  '\uE004': 61,
  '\uE006': 66,
  '\uE007': 66,
  '\uE00C': 111,
  '\uE017': 112,
  '\uE012': 21,
  '\uE013': 19,
  '\uE014': 22,
  '\uE015': 20,
};

function num(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new ActionsError(`'${what}' must be a number`);
  return v;
}

export async function performActions(body: unknown, device: Device, screen: Screen, centerOf: ElementCenter): Promise<void> {
  const sources = (body as { actions?: unknown } | null)?.actions;
  if (!Array.isArray(sources)) throw new ActionsError("'actions' must be an array of input sources");
  const started = Date.now();
  for (const source of sources as { type?: unknown; actions?: unknown }[]) {
    if (!Array.isArray(source?.actions)) throw new ActionsError("Each input source must have an 'actions' array");
    const steps = source.actions as Record<string, unknown>[];
    if (source.type === 'pointer') await pointer(steps, screen, centerOf, started);
    else if (source.type === 'key') await keys(steps, device, started);
    else if (source.type === 'none') await pauses(steps, started);
    else throw new ActionsError(`Unsupported input source type '${String(source.type)}'`);
  }
}

async function wait(ms: number, started: number): Promise<void> {
  const left = MAX_SEQUENCE_MS - (Date.now() - started);
  if (left <= 0) throw new ActionsError(`The actions take longer than ${MAX_SEQUENCE_MS} ms`);
  await delay(Math.min(Math.max(0, ms), left));
}

async function pauses(steps: Record<string, unknown>[], started: number): Promise<void> {
  for (const step of steps) if (step.type === 'pause') await wait(num(step.duration ?? 0, 'duration'), started);
}

async function pointer(steps: Record<string, unknown>[], screen: Screen, centerOf: ElementCenter, started: number): Promise<void> {
  let at: Point = { x: 0, y: 0 };
  let down: { from: Point; at: number } | undefined;
  for (const step of steps) {
    switch (step.type) {
      case 'pause':
        await wait(num(step.duration ?? 0, 'duration'), started);
        break;
      case 'pointerMove': {
        const x = num(step.x ?? 0, 'x');
        const y = num(step.y ?? 0, 'y');
        const origin = step.origin ?? 'viewport';
        let base: Point = { x: 0, y: 0 };
        if (origin === 'pointer') base = at;
        else if (origin && typeof origin === 'object') base = centerOf(origin as Record<string, unknown>);
        else if (origin !== 'viewport') throw new ActionsError(`Unknown pointer origin '${String(origin)}'`);
        await wait(num(step.duration ?? 0, 'duration'), started);
        at = { x: Math.round(base.x + x), y: Math.round(base.y + y) };
        break;
      }
      case 'pointerDown':
        down = { from: at, at: Date.now() };
        break;
      case 'pointerUp':
        if (down) screen.swipe(down.from.x, down.from.y, at.x, at.y, Date.now() - down.at);
        down = undefined;
        break;
      case 'pointerCancel':
        down = undefined;
        break;
      default:
        throw new ActionsError(`Unsupported pointer action '${String(step.type)}'`);
    }
  }
}

async function keys(steps: Record<string, unknown>[], device: Device, started: number): Promise<void> {
  for (const step of steps) {
    if (step.type === 'pause') await wait(num(step.duration ?? 0, 'duration'), started);
    else if (step.type === 'keyDown') {
      const value = typeof step.value === 'string' ? step.value : '';
      const code = SPECIAL_KEYS[value];
      if (code !== undefined) device.keyevent(code);
      else if (value >= ' ' && !/[\uE000-\uF8FF]/.test(value)) device.typeText(value);
    } else if (step.type !== 'keyUp') throw new ActionsError(`Unsupported key action '${String(step.type)}'`);
  }
}
