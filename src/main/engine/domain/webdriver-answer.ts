import { LAB_OWNED } from './webdriver-capabilities.js';

/*
 * The capabilities a session answers with (new session, GET /session/{id}, appium/capabilities, session discovery),
 * naming the phone as the lab knows it. Appium reached the phone through the lab's bridge (an Android phone's address
 * is 127.0.0.1:<port>, new each session) on ports the lab chose; a client, Appium Inspector's list and a test report
 * should see the phone's serial and name, and the client's own settings, never the lab's plumbing.
 */

export interface PhoneNames {
  serial: string;
  deviceName: string;
  /** The client's appium:newCommandTimeout, in seconds: the lab enforces it (Appium is told 0). */
  newCommandTimeoutS: number;
  /** Where Appium reached the phone (the bridge's address), wherever Appium repeats it. */
  bridge?: string;
}

/** Names Appium answers under, with or without `appium:`: what the lab set for the session, not the client. */
const HIDDEN = new Set([...LAB_OWNED.map((name) => name.slice('appium:'.length)), 'emPort', 'chromedriverExecutable']);

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function named(caps: Record<string, unknown>, phone: PhoneNames, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(caps)) {
    const name = key.startsWith('appium:') ? key.slice('appium:'.length) : key;
    if (HIDDEN.has(name)) continue;
    if (name === 'udid' || name === 'deviceUDID') out[key] = phone.serial;
    else if (name === 'deviceName') out[key] = phone.deviceName;
    else if (name === 'newCommandTimeout') out[key] = phone.newCommandTimeoutS;
    else if (isObject(value) && depth < 3) out[key] = named(value, phone, depth + 1);
    else if (typeof value === 'string' && phone.bridge && value.includes(phone.bridge)) out[key] = value.replaceAll(phone.bridge, phone.serial);
    else out[key] = value;
  }
  return out;
}

/**
 * Appium's capabilities as the client sees them: `udid` and `deviceUDID` the fleet's serial, `deviceName` the phone's
 * name, `newCommandTimeout` the client's own, and no adb port, system port, WDA URL or bridge address (also inside
 * `desired`, where Appium repeats what it was asked).
 */
export function answeredCapabilities(caps: Record<string, unknown>, phone: PhoneNames): Record<string, unknown> {
  const out = named(caps, phone, 0);
  for (const name of ['appium:udid', 'appium:deviceName', 'appium:newCommandTimeout'] as const) {
    const bare = name.slice('appium:'.length);
    if (!(name in out) && !(bare in out)) out[name] = bare === 'udid' ? phone.serial : bare === 'deviceName' ? phone.deviceName : phone.newCommandTimeoutS;
  }
  return out;
}
