import { checkFilters, compareVersions, matches, type DeviceFilter, type MatchableDevice } from './device-filters.js';
import { modelName } from '../../../shared/phone-models.js';
import { AppRefError, readAppRef, readOtherApps, type AppRef } from './app-refs.js';
import { ServiceError } from './errors.js';
import { refusedSetting } from './webdriver-commands.js';

/*
 * A WebDriver new-session request, read as the lab reads it: W3C capability processing (alwaysMatch merged with each
 * firstMatch, `appium:options` flattened as Appium flattens it), then the capabilities that choose a phone turned into the
 * allocation's own filter language, and every other one through the allowlist of what the lab forwards to Appium.
 */

/** The two W3C errors a new-session request can earn before Appium sees it. */
export type WebDriverErrorName = 'invalid argument' | 'session not created';

export class CapabilityError extends Error {
  constructor(
    readonly w3c: WebDriverErrorName,
    message: string,
  ) {
    super(message);
  }
}

/** What the client asked of the lab through `benchtop:options`. */
export interface RunOptions {
  /** The lab session to add the phone to; a new one otherwise. */
  sessionId?: string;
  /** How long the request may wait in the queue for a busy phone. */
  queueTimeoutMs: number;
  /** The test result's name and build. */
  name?: string;
  build?: string;
  /**
   * Whether the run keeps a video of the phone's screen (as clouds' `video: false` turns it off), or, as Playwright's
   * `video: 'retain-on-failure'` (Sauce Labs' `videoUploadOnPass: false`), records it and keeps it unless the run passed.
   * Absent, the lab's own choice for runs that do not say (lab settings, webDriverVideo).
   */
  video?: VideoChoice;
}

export type VideoChoice = boolean | typeof RETAIN_ON_FAILURE;
export const RETAIN_ON_FAILURE = 'retain-on-failure';

export interface NewSessionRequest {
  platform: 'android' | 'ios';
  /** The allocation's filters: platform, version range, name, serial and the client's own. */
  filters: DeviceFilter[];
  /** The capabilities for Appium, the lab's own still to be added; `benchtop:options` and the command timeout taken out. */
  appium: Record<string, unknown>;
  options: RunOptions;
  /** The client's appium:newCommandTimeout: the lab enforces it (0: never). */
  newCommandTimeoutMs: number;
  /** The apps to install before Appium starts (appium:otherApps, then appium:app), which the lab installs itself. */
  apps: { app?: AppRef; otherApps: AppRef[] };
  /** What chose the phone, in the client's words: for the message when nothing matches. */
  asked: Array<{ capability: string; value: string; filters: DeviceFilter[] }>;
}

/** Appium's own default, which clients rely on: a session without a command for 60 s ends. */
export const DEFAULT_NEW_COMMAND_TIMEOUT_S = 60;
export const DEFAULT_QUEUE_TIMEOUT_S = 300;
const MAX_QUEUE_TIMEOUT_S = 3600;
const MAX_TEXT = 200;

/** W3C's own capabilities (Appium compares them without case); any other name without a vendor prefix is Appium's. */
const STANDARD = new Set([
  'browserName', 'browserVersion', 'platformName', 'acceptInsecureCerts', 'pageLoadStrategy', 'proxy', 'setWindowRect',
  'timeouts', 'strictFileInteractability', 'unhandledPromptBehavior', 'webSocketUrl', 'userAgent',
].map((name) => name.toLowerCase()));
const isStandard = (name: string) => STANDARD.has(name.toLowerCase());

/**
 * What the lab forwards to Appium: capabilities that act only on the held phone or on Appium's own pace. Everything
 * else is refused (an allowlist): Appium runs on the lab's host, and a capability it acts on there (a file, a program,
 * a port, a host, an emulator) would be the caller's reach into the lab.
 */
const FORWARDED = {
  both: new Set([
    'platformName', 'acceptInsecureCerts', 'pageLoadStrategy', 'setWindowRect', 'timeouts', 'strictFileInteractability', 'unhandledPromptBehavior',
    'appium:automationName', 'appium:platformVersion', 'appium:deviceName', 'appium:udid', 'appium:newCommandTimeout', 'appium:noReset',
    'appium:fullReset', 'appium:language', 'appium:locale', 'appium:orientation', 'appium:autoLaunch', 'appium:eventTimings',
    'appium:printPageSourceOnFindFailure', 'appium:shouldTerminateApp', 'appium:forceAppLaunch', 'appium:settings', 'benchtop:options',
    // Read by the lab (lab://files/<id> or an http(s) URL), installed by the lab, never sent on to Appium.
    'appium:app', 'appium:otherApps',
  ]),
  android: new Set([
    'appium:appPackage', 'appium:appActivity', 'appium:appWaitActivity', 'appium:appWaitPackage', 'appium:appWaitDuration',
    'appium:appWaitForLaunch', 'appium:intentAction', 'appium:intentCategory', 'appium:intentFlags', 'appium:optionalIntentArguments',
    'appium:dontStopAppOnReset', 'appium:autoGrantPermissions', 'appium:unicodeKeyboard', 'appium:hideKeyboard', 'appium:noSign',
    'appium:disableWindowAnimation', 'appium:skipUnlock', 'appium:unlockType', 'appium:unlockKey', 'appium:unlockStrategy',
    'appium:unlockSuccessTimeout', 'appium:skipDeviceInitialization', 'appium:skipServerInstallation', 'appium:skipSettingsAppReinstall',
    'appium:uiautomator2ServerLaunchTimeout', 'appium:uiautomator2ServerInstallTimeout', 'appium:uiautomator2ServerReadTimeout',
    'appium:disableSuppressAccessibilityService', 'appium:androidInstallTimeout', 'appium:deviceReadyTimeout',
    'appium:androidDeviceReadyTimeout', 'appium:clearDeviceLogsOnStart', 'appium:skipLogcatCapture', 'appium:logcatFormat',
    'appium:logcatFilterSpecs', 'appium:ignoreHiddenApiPolicyError', 'appium:ignoreUnimportantViews', 'appium:allowTestPackages',
    'appium:localeScript', 'appium:timeZone', 'appium:gpsEnabled', 'appium:mockLocationApp', 'appium:userProfile', 'appium:allowDelayAdb',
  ]),
  ios: new Set([
    'appium:bundleId', 'appium:autoAcceptAlerts', 'appium:autoDismissAlerts', 'appium:processArguments', 'appium:waitForIdleTimeout',
    'appium:wdaLaunchTimeout', 'appium:wdaConnectionTimeout', 'appium:wdaStartupRetries', 'appium:wdaStartupRetryInterval',
    'appium:useNativeCachingStrategy', 'appium:maxTypingFrequency', 'appium:nativeTyping', 'appium:shouldUseSingletonTestManager',
    'appium:useJSONSource', 'appium:appLaunchStateTimeoutSec', 'appium:resetOnSessionStartOnly', 'appium:commandTimeouts',
    'appium:screenshotQuality', 'appium:skipLogCapture', 'appium:disableAutomaticScreenshots', 'appium:skipTriggerInputEventAfterSendkeys',
    'appium:sendKeyStrategy',
    // How long the driver waits on the held phone's Web Inspector for web content before getContexts answers (5 s by
    // default): a native suite sets it low so that each getContexts does not cost five seconds.
    'appium:webviewConnectTimeout', 'appium:webviewConnectRetries',
  ]),
};

/** Where Appium would reach the phone, or listen for it: the lab decides these for every session. */
export const LAB_OWNED = [
  'appium:adbPort', 'appium:remoteAdbHost', 'appium:systemPort', 'appium:mjpegServerPort', 'appium:chromedriverPort',
  'appium:chromedriverPorts', 'appium:webDriverAgentUrl', 'appium:wdaLocalPort', 'appium:wdaRemotePort', 'appium:wdaBindingIP',
  'appium:wdaBaseUrl', 'appium:mjpegServerUrl', 'appium:usePrebuiltWDA', 'appium:usePreinstalledWDA', 'appium:useNewWDA',
  'appium:derivedDataPath', 'appium:suppressKillServer', 'appium:adbExecTimeout', 'appium:androidDeviceSocket',
  'appium:webviewDevtoolsPort', 'appium:adbListenAllNetwork', 'appium:allowOfflineDevices',
] as const;

/** Why the best-known refused capabilities are refused, in words a suite's author can act on. */
function whyRefused(name: string): string {
  if ((LAB_OWNED as readonly string[]).includes(name)) return `The lab sets ${name} for each session: leave it out.`;
  if (name === 'browserName' || name === 'browserVersion' || /^appium:(chrome|autoWebview|nativeWebScreenshot|safari|includeSafari)/i.test(name)) {
    return `${name}: this lab drives native apps; it has no lab-managed Chrome or Safari driver yet (no browsers, no webviews).`;
  }
  if (name === 'proxy' || name === 'webSocketUrl') return `${name} would name an address on the lab's side; the lab forwards no proxy and no BiDi connection.`;
  if (name === 'appium:options') return 'appium:options must be a JSON object of Appium capabilities.';
  return `${name} is not a capability this lab forwards to Appium (docs/webdriver.md lists those it does): Appium acts on capabilities on the lab's host, so the lab forwards only those it knows name nothing of that host.`;
}

const AUTOMATION: Record<'android' | 'ios', string> = { android: 'UiAutomator2', ios: 'XCUITest' };
const DOTTED_NUMBER = /^\d+(\.\d+)*$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const APPIUM_OPTIONS = 'appium:options';

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const bad = (message: string) => new CapabilityError('invalid argument', message);

/**
 * One capability object as Appium reads it: the entries of `appium:options` promoted over the top level (each
 * `appium:`-prefixed unless it already is; a W3C name among them refused, as Appium refuses it), then unprefixed
 * non-standard names made appium:'s (Appium itself would refuse them; the lab reads them as it always has).
 */
function flattened(caps: Record<string, unknown>, where: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(caps)) {
    if (key !== APPIUM_OPTIONS) out[!key.includes(':') && !isStandard(key) ? `appium:${key}` : key] = value;
  }
  if (!(APPIUM_OPTIONS in caps)) return out;
  const options = caps[APPIUM_OPTIONS];
  if (!isObject(options)) throw bad(whyRefused(APPIUM_OPTIONS));
  for (const [key, value] of Object.entries(options)) {
    if (isStandard(key)) throw bad(`${where}.appium:options holds "${key}", a W3C capability: appium:options takes Appium's own capabilities only.`);
    const name = key.startsWith('appium:') ? key : `appium:${key}`;
    // The phone is chosen at the top level, where the lab reads it; inside appium:options it is the lab's to set.
    if (name === 'appium:udid') throw bad('appium:options.udid: choose the phone with appium:udid at the top level of the capabilities; inside appium:options the lab sets it.');
    out[name] = value;
  }
  return out;
}

/**
 * W3C's "process capabilities": alwaysMatch with each firstMatch (a name in both is an invalid argument), in order,
 * each flattened as Appium flattens it first. The lab tries the merged sets in that order and takes the first that a
 * phone of the lab could match; what it forwards to Appium is always built from that merged set, never the raw body.
 */
export function capabilitySets(body: unknown): Array<Record<string, unknown>> {
  if (!isObject(body) || !isObject(body.capabilities)) {
    throw bad('The body must be a JSON object with "capabilities": {"alwaysMatch": {...}, "firstMatch": [{...}]}.');
  }
  const { alwaysMatch = {}, firstMatch = [{}] } = body.capabilities;
  if (!isObject(alwaysMatch)) throw bad('capabilities.alwaysMatch must be a JSON object.');
  if (!Array.isArray(firstMatch) || firstMatch.length === 0 || !firstMatch.every(isObject)) {
    throw bad('capabilities.firstMatch must be a non-empty list of JSON objects.');
  }
  const always = flattened(alwaysMatch, 'alwaysMatch');
  return (firstMatch as Array<Record<string, unknown>>).map((first, i) => {
    const extra = flattened(first, `firstMatch[${i}]`);
    const both = Object.keys(extra).find((key) => key in always);
    if (both) throw bad(`"${both}" is in both alwaysMatch and firstMatch.`);
    return { ...always, ...extra };
  });
}

/** Every capability on the allowlist of the platform, settings on the settings allowlist; else why not. */
function checkForwarded(caps: Record<string, unknown>, platform: 'android' | 'ios'): void {
  for (const [name, value] of Object.entries(caps)) {
    const setting = /^appium:settings\[(\S+)\]$/.exec(name);
    if (setting) {
      const why = refusedSetting({ [setting[1]!]: value }, platform);
      if (why) throw bad(`${name}: ${why}`);
      continue;
    }
    // W3C's empty browserName is how some clients say "no browser".
    if (name === 'browserName' && value === '') continue;
    // A cloud's own options: read for what the lab has of them (cloudRunOptions), never forwarded.
    if (Object.hasOwn(CLOUD_OPTIONS, name)) continue;
    if (!FORWARDED.both.has(name) && !FORWARDED[platform].has(name)) throw bad(whyRefused(name));
  }
  if (caps['appium:settings'] !== undefined) {
    if (!isObject(caps['appium:settings'])) throw bad('appium:settings must be a JSON object of settings.');
    const why = refusedSetting(caps['appium:settings'], platform);
    if (why) throw bad(`appium:settings: ${why}`);
  }
}

function text(caps: Record<string, unknown>, name: string): string | undefined {
  const value = caps[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string' || value.trim() === '') throw bad(`${name} must be a non-empty string.`);
  if (value.length > MAX_TEXT) throw bad(`${name} is longer than ${MAX_TEXT} characters.`);
  return value.trim();
}

/** "14" is 14.x, "14.1" is 14.1.x: from the version up to the next one at its last part. */
export function versionRange(version: string): DeviceFilter[] {
  const parts = version.split('.').map(Number);
  const next = [...parts.slice(0, -1), parts[parts.length - 1]! + 1].join('.');
  return [
    { attribute: 'version', operator: 'GREATER_THAN_OR_EQUALS', value: version },
    { attribute: 'version', operator: 'LESS_THAN', value: next },
  ];
}

function runOptions(value: unknown): { options: RunOptions; filters: DeviceFilter[] } {
  if (value === undefined) return { options: { queueTimeoutMs: DEFAULT_QUEUE_TIMEOUT_S * 1000 }, filters: [] };
  if (!isObject(value)) throw bad('benchtop:options must be a JSON object.');
  const { filters = [], sessionId, queueTimeout = DEFAULT_QUEUE_TIMEOUT_S, name, build, video } = value;
  if (!Array.isArray(filters) || !filters.every((f) => isObject(f) && ['attribute', 'operator', 'value'].every((k) => typeof f[k] === 'string'))) {
    throw bad('benchtop:options.filters must be a list of {attribute, operator, value}, as the API\'s allocation takes them.');
  }
  if (sessionId !== undefined && (typeof sessionId !== 'string' || !UUID.test(sessionId))) throw bad('benchtop:options.sessionId must be a session id (a UUID).');
  if (typeof queueTimeout !== 'number' || !(queueTimeout >= 0 && queueTimeout <= MAX_QUEUE_TIMEOUT_S)) {
    throw bad(`benchtop:options.queueTimeout is seconds, from 0 to ${MAX_QUEUE_TIMEOUT_S}.`);
  }
  for (const [key, v] of [['name', name], ['build', build]] as const) {
    if (v !== undefined && (typeof v !== 'string' || v.length > MAX_TEXT)) throw bad(`benchtop:options.${key} must be a string of at most ${MAX_TEXT} characters.`);
  }
  if (video !== undefined && typeof video !== 'boolean' && video !== RETAIN_ON_FAILURE) {
    throw bad(`benchtop:options.video is true (the run keeps a video), false, or "${RETAIN_ON_FAILURE}" (kept unless the run passed); without it, the lab's settings choose (a video, unless the lab owner chose otherwise).`);
  }
  return {
    filters: filters as DeviceFilter[],
    options: {
      queueTimeoutMs: queueTimeout * 1000,
      ...(video !== undefined ? { video } : {}),
      ...(sessionId ? { sessionId } : {}),
      ...(typeof name === 'string' ? { name } : {}),
      ...(typeof build === 'string' ? { build } : {}),
    },
  };
}

/**
 * BrowserStack's, Sauce Labs' and LambdaTest's own capability objects, as a suite moving here has them: the run's name, its build and
 * its video are read from them (benchtop:options wins), and the phone where a cloud asks for it there (BrowserStack's
 * and LambdaTest's deviceName and version; appium:* wins); the rest is the cloud's (its tunnels, regions) and means
 * nothing here, so it is ignored, and none of it reaches Appium.
 */
const CLOUD_OPTIONS: Record<string, { name: string; build: string; video?: string; videoOnPass?: string; deviceName?: string; version?: string; platformName?: string }> = {
  'bstack:options': { name: 'sessionName', build: 'buildName', video: 'video', deviceName: 'deviceName', version: 'osVersion' },
  'sauce:options': { name: 'name', build: 'build', video: 'recordVideo', videoOnPass: 'videoUploadOnPass' },
  'lt:options': { name: 'name', build: 'build', video: 'video', deviceName: 'deviceName', version: 'platformVersion', platformName: 'platformName' },
};

/**
 * A capability that chooses the phone, from the top level (appium:deviceName) or, where a cloud's suite has it, from
 * that cloud's own object (bstack:options.deviceName): which one it came from, for the error that names it.
 */
function choosing(caps: Record<string, unknown>, name: string, field: 'deviceName' | 'version' | 'platformName'): { capability: string; value: string } | undefined {
  const top = text(caps, name);
  if (top !== undefined) return { capability: name, value: top };
  for (const [capability, keys] of Object.entries(CLOUD_OPTIONS)) {
    const key = keys[field];
    const options = caps[capability];
    if (key === undefined || !isObject(options)) continue;
    const value = text({ [`${capability}.${key}`]: options[key] }, `${capability}.${key}`);
    if (value !== undefined) return { capability: `${capability}.${key}`, value };
  }
  return undefined;
}

function cloudRunOptions(caps: Record<string, unknown>): Pick<RunOptions, 'name' | 'build' | 'video'> {
  const read: Pick<RunOptions, 'name' | 'build' | 'video'> = {};
  for (const [capability, keys] of Object.entries(CLOUD_OPTIONS)) {
    const value = caps[capability];
    if (value === undefined) continue;
    if (!isObject(value)) throw bad(`${capability} must be a JSON object.`);
    for (const field of ['name', 'build'] as const) {
      const v = value[keys[field]];
      if (v === undefined) continue;
      if ((typeof v !== 'string' && typeof v !== 'number') || String(v).length > MAX_TEXT) throw bad(`${capability}.${keys[field]} must be a string of at most ${MAX_TEXT} characters.`);
      read[field] ??= String(v);
    }
    for (const key of [keys.video, keys.videoOnPass]) {
      if (key !== undefined && value[key] !== undefined && typeof value[key] !== 'boolean') throw bad(`${capability}.${key} is true or false.`);
    }
    // Sauce Labs records unless recordVideo is false, and keeps a passed run's video unless videoUploadOnPass is false.
    if (keys.video && value[keys.video] === false) read.video ??= false;
    else if (keys.videoOnPass && value[keys.videoOnPass] === false) read.video ??= RETAIN_ON_FAILURE;
  }
  return read;
}

/** One merged capability set, read: which phone it asks for, and what goes on to Appium. */
export function readCapabilities(caps: Record<string, unknown>): NewSessionRequest {
  const platformName = choosing(caps, 'platformName', 'platformName')?.value;
  if (!platformName) throw bad('platformName is required: Android or iOS.');
  const platform = platformName.toLowerCase();
  if (platform !== 'android' && platform !== 'ios') {
    throw new CapabilityError('session not created', `This lab has Android and iOS phones, not platformName "${platformName}".`);
  }
  const automationName = text(caps, 'appium:automationName');
  if (automationName && automationName.toLowerCase() !== AUTOMATION[platform].toLowerCase()) {
    throw new CapabilityError('session not created', `This lab drives ${platformName} with appium:automationName ${AUTOMATION[platform]}, not "${automationName}".`);
  }
  checkForwarded(caps, platform);
  const asked: NewSessionRequest['asked'] = [{ capability: 'platformName', value: platformName, filters: [{ attribute: 'platform', operator: 'EQUALS', value: platform }] }];
  const version = choosing(caps, 'appium:platformVersion', 'version');
  if (version !== undefined) {
    if (!DOTTED_NUMBER.test(version.value)) throw bad(`${version.capability} must be numbers separated by dots, like 14 or 17.4, not "${version.value}".`);
    asked.push({ ...version, filters: versionRange(version.value) });
  }
  // The Fleet's name or the model, as a cloud's catalog writes it ("Google Pixel 7", "iPhone 15", Sauce Labs' "iPhone.*").
  const deviceName = choosing(caps, 'appium:deviceName', 'deviceName');
  if (deviceName !== undefined) asked.push({ ...deviceName, filters: [{ attribute: 'deviceName', operator: 'EQUALS', value: deviceName.value }] });
  const udid = text(caps, 'appium:udid');
  if (udid !== undefined) asked.push({ capability: 'appium:udid', value: udid, filters: [{ attribute: 'serial', operator: 'EQUALS', value: udid }] });
  const { options: benchtop, filters: own } = runOptions(caps['benchtop:options']);
  const options: RunOptions = { ...cloudRunOptions(caps), ...benchtop };
  if (own.length > 0) asked.push({ capability: 'benchtop:options.filters', value: JSON.stringify(own), filters: own });
  let filters: DeviceFilter[];
  try {
    filters = checkFilters(asked.flatMap((a) => a.filters));
  } catch (error) {
    if (error instanceof ServiceError) throw bad(error.message);
    throw error;
  }
  const timeout = caps['appium:newCommandTimeout'] ?? DEFAULT_NEW_COMMAND_TIMEOUT_S;
  if (typeof timeout !== 'number' || !(timeout >= 0)) throw bad('appium:newCommandTimeout is seconds, 0 or more.');
  let apps: NewSessionRequest['apps'];
  try {
    apps = {
      otherApps: caps['appium:otherApps'] === undefined ? [] : readOtherApps(caps['appium:otherApps']),
      ...(caps['appium:app'] === undefined ? {} : { app: readAppRef(caps['appium:app'], 'appium:app') }),
    };
  } catch (error) {
    if (error instanceof AppRefError) throw bad(error.message);
    throw error;
  }
  const appium = { ...caps };
  delete appium['appium:app'];
  delete appium['appium:otherApps'];
  delete appium['benchtop:options'];
  for (const capability of Object.keys(CLOUD_OPTIONS)) delete appium[capability];
  delete appium['appium:newCommandTimeout'];
  delete appium['appium:udid'];
  delete appium.browserName;
  appium['appium:automationName'] = AUTOMATION[platform];
  return { platform, filters, appium, options, newCommandTimeoutMs: timeout * 1000, apps, asked };
}

/**
 * Why no phone of the lab could ever take this request, naming the first capability that left none, and what the
 * lab has instead; undefined when some phone matches.
 */
export function whyNothingMatches(phones: readonly MatchableDevice[], request: Pick<NewSessionRequest, 'asked'>): string | undefined {
  let left = [...phones];
  for (const [i, { capability, value, filters }] of request.asked.entries()) {
    // What the capability chose by (a version, a device name), wherever the suite wrote it; the lab's own filters say
    // nothing more than themselves.
    const attribute = capability === 'benchtop:options.filters' ? undefined : filters[0]?.attribute;
    const next = left.filter((phone) => matches(phone, filters));
    if (next.length === 0) {
      const have = (pick: (p: MatchableDevice) => string, sort?: (a: string, b: string) => number) =>
        [...new Set(left.map(pick))].sort(sort).join(', ') || 'none';
      const instead =
        attribute === 'version' ? ` (versions here: ${have((p) => p.osVersion, compareVersions)})` :
        attribute === 'deviceName' ? ` (phones here: ${have((p) => (p.model && modelName(p.model) !== p.name ? `${p.name} (${modelName(p.model)})` : p.name))})` : '';
      return `No phone in this lab matches ${capability} ${value}${i === 0 ? '' : ' among those matching the capabilities before it'}${instead}.`;
    }
    left = next;
  }
  return undefined;
}
