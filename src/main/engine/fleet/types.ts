import type { ActionResult, DeviceAction, UiElement } from '../../../shared/api/devices.js';

export type { ActionResult, Button, DeviceAction, UiElement } from '../../../shared/api/devices.js';

/**
 * device: usable; unauthorized: the phone has not trusted this computer; wda_unavailable: an iPhone whose
 * WebDriverAgent is not answering; offline: attached but not answering; gone: not attached.
 */
export type PhoneState = 'device' | 'unauthorized' | 'wda_unavailable' | 'offline' | 'gone';

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

/** Driving one phone: what every platform implements, and the only way the engine touches a phone. */
export interface PhoneDriver {
  /** Wakes the screen, dismisses the keyguard, goes home; returns the installed packages. */
  prepare(): Promise<string[]>;
  /** Uninstalls what was added since `packagesBefore`, force-stops apps, goes home, resets rotation. */
  cleanup(packagesBefore: readonly string[]): Promise<void>;
  /** Installs the app file at a local path (an APK on Android), replacing an earlier version. */
  install(appPath: string): Promise<void>;
  /** A PNG of the screen. */
  screenshot(): Promise<Buffer>;
  elements(): Promise<UiElement[]>;
  /** The signal, when it aborts, stops the command on the phone. */
  act(action: DeviceAction, signal?: AbortSignal): Promise<ActionResult>;
  /** Frames the phone streams itself (WDA's MJPEG on an iPhone), when it can; else the live screen polls screenshot(). */
  liveFrames?(signal: AbortSignal): AsyncIterable<{ data: Buffer; format: 'png' | 'jpeg'; width: number; height: number }>;
  /** Restarts the phone; resolves once it has been asked to (the phone then drops off the bus and comes back). */
  reboot(): Promise<void>;
}

/** The hardware side: which phones are attached, a driver for each, and news of phones coming and going. */
export interface PhoneSource {
  list(): Phone[];
  get(serial: string): Phone | undefined;
  driver(serial: string): PhoneDriver;
  on(event: 'phone', listener: (phone: Phone) => void): unknown;
  on(event: 'gone', listener: (serial: string) => void): unknown;
  off(event: 'phone', listener: (phone: Phone) => void): unknown;
  off(event: 'gone', listener: (serial: string) => void): unknown;
}
