import type { PhoneState } from '../store/fleet.js';

/** A phone as the fleet sees it right now. */
export interface Phone {
  serial: string;
  platform: 'android' | 'ios';
  type: 'real';
  name: string;
  osVersion: string;
  state: PhoneState;
  battery: number | null;
}

/** One element of the screen, flattened from the UI hierarchy. */
export interface UiElement {
  text: string;
  contentDescription: string;
  resourceId: string;
  className: string;
  bounds: { x: number; y: number; width: number; height: number };
  clickable: boolean;
}

export const BUTTONS = ['HOME', 'BACK', 'ENTER', 'VOLUME_UP', 'VOLUME_DOWN', 'POWER', 'APP_SWITCH'] as const;
export type Button = (typeof BUTTONS)[number];

/** What the API, the assistant and the GUI can do to a phone: one vocabulary for all three. */
export type DeviceAction =
  | { type: 'tap'; x: number; y: number }
  | { type: 'longPress'; x: number; y: number; durationMs?: number }
  | { type: 'swipe'; fromX: number; fromY: number; toX: number; toY: number; durationMs?: number }
  | { type: 'typeText'; text: string }
  | { type: 'pressButton'; button: Button }
  | { type: 'launchApp'; packageName: string }
  | { type: 'terminateApp'; packageName: string }
  | { type: 'listApps' }
  | { type: 'openUrl'; url: string }
  | { type: 'setOrientation'; orientation: 'portrait' | 'landscape' }
  | { type: 'screenSize' };

export type ActionResult = { ok: true; apps?: string[]; width?: number; height?: number };

/** Driving one phone. */
export interface PhoneDriver {
  /** Wakes the screen, dismisses the keyguard, goes home; returns the installed packages. */
  prepare(): Promise<string[]>;
  /** Uninstalls what was added since `packagesBefore`, force-stops apps, goes home, resets rotation. */
  cleanup(packagesBefore: readonly string[]): Promise<void>;
  /** Installs the app file at a local path (an APK on Android), replacing an earlier version. */
  install(appPath: string): Promise<void>;
  screenshot(): Promise<Buffer>;
  elements(): Promise<UiElement[]>;
  /** The signal, when it aborts, stops the command on the phone. */
  act(action: DeviceAction, signal?: AbortSignal): Promise<ActionResult>;
  /**
   * Frames the phone pushes as its screen changes (Android: minicap), until `signal` aborts; absent where the
   * platform has no such feed. Throws when the phone cannot run it, so the caller can fall back to screenshots.
   */
  liveFrames?(signal: AbortSignal, options: { maxSize: number; maxFps: number }): AsyncIterable<LiveFrame>;
  /** The phone's log from the start of the allocation on, then live, until `signal` aborts. */
  logs?(signal: AbortSignal): AsyncIterable<LogLine>;
}

/** One log line (logcat on Android). */
export interface LogLine {
  /** ISO 8601, UTC. */
  time: string;
  level: 'verbose' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';
  tag: string;
  pid: number;
  message: string;
}

/** One frame of a live feed, its size read from the image itself. */
export interface LiveFrame {
  data: Buffer;
  format: 'jpeg';
  width: number;
  height: number;
  source: 'minicap';
  /** The phone's screen the frame shows, in the phone's pixels (what taps use); the frame may be scaled down. */
  screen: { width: number; height: number };
}
