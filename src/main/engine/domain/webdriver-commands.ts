/*
 * A command of a running WebDriver session, read as the lab reads it before Appium sees it: the path after the session
 * id parsed as a route of W3C WebDriver or Appium (from @appium/base-driver's METHOD_MAP and the UiAutomator2 and
 * XCUITest drivers' method maps), scripts and settings through allowlists. Appium runs on the lab's host: whatever it
 * would act on there (a file, a program, a port, a host, an emulator's console, a webview's Chrome) is refused.
 */

/** The W3C errors a command can earn before Appium sees it. */
export class CommandError extends Error {
  constructor(
    readonly w3c: 'unknown command' | 'invalid argument',
    message: string,
  ) {
    super(message);
  }
}

/** How the lab treats a command's body: read whole and checked (a small one), or passed on to Appium as a stream. */
export type BodyUse = 'inspect' | 'stream';

export interface Command {
  method: string;
  /** The path segments after the session id, each as sent (only characters that need no encoding). */
  segments: string[];
  /** The route template it matched, as the run's log names it: `element/:id/click`. */
  template: string;
  body: BodyUse;
}

export type Platform = 'android' | 'ios';

/**
 * The routes a session forwards, by method: `template [inspect]`; a template's `:name` segments take an element id,
 * an attribute name and the like. The rest of Appium's routes are browser commands, emulator or simulator commands,
 * or take a host's paths and URLs.
 */
const ROUTES = `
GET timeouts
POST timeouts
POST timeouts/implicit_wait
POST timeouts/async_script
GET window
GET window/handles
GET window/rect
GET window/:handle/size
GET element/active
POST element inspect
POST elements inspect
POST element/:id/element inspect
POST element/:id/elements inspect
GET element/:id/selected
GET element/:id/displayed
GET element/:id/enabled
GET element/:id/attribute/:name
GET element/:id/property/:name
GET element/:id/css/:name
GET element/:id/text
GET element/:id/name
GET element/:id/rect
GET element/:id/location
GET element/:id/location_in_view
GET element/:id/size
GET element/:id/screenshot
POST element/:id/click
POST element/:id/clear
POST element/:id/value
POST appium/element/:id/value
POST appium/element/:id/replace_value
GET source
GET screenshot
POST back
POST execute/sync inspect
POST execute/async inspect
POST actions
DELETE actions
POST keys
POST alert/accept
POST alert/dismiss
GET alert/text
POST alert/text
GET orientation
POST orientation
GET rotation
POST rotation
GET location
POST location
GET network_connection
POST network_connection
GET context
GET contexts
POST log
GET log/types
POST se/log
GET se/log/types
GET appium/context
GET appium/contexts
GET appium/capabilities
GET appium/settings
POST appium/settings inspect
GET appium/commands
GET appium/extensions
POST appium/events
POST appium/log_event
GET appium/device/rotation
POST appium/device/rotation
GET appium/device/orientation
POST appium/device/orientation
GET appium/device/system_time
POST appium/device/system_time
POST appium/device/activate_app
POST appium/device/terminate_app
POST appium/device/app_state
POST appium/device/remove_app
POST appium/device/app_installed
POST appium/device/install_app inspect
POST appium/device/hide_keyboard
GET appium/device/is_keyboard_shown
POST appium/device/push_file
POST appium/device/pull_file
POST appium/device/pull_folder
POST appium/device/lock
POST appium/device/unlock
POST appium/device/is_locked
POST appium/device/shake
POST appium/device/press_keycode
POST appium/device/long_press_keycode
POST appium/device/keyevent
POST appium/device/toggle_airplane_mode
POST appium/device/toggle_data
POST appium/device/toggle_wifi
POST appium/device/toggle_location_services
POST appium/device/open_notifications
POST appium/device/start_activity
POST appium/device/get_clipboard
POST appium/device/set_clipboard
GET appium/device/current_activity
GET appium/device/current_package
GET appium/device/system_bars
GET appium/device/display_density
POST appium/app/background
POST appium/app/launch
POST appium/app/close
POST appium/start_recording_screen inspect
POST appium/stop_recording_screen inspect
`;

interface Route {
  method: string;
  parts: string[];
  template: string;
  body: BodyUse;
}

const TABLE: Route[] = ROUTES.trim().split('\n').map((line) => {
  const [method, template, use] = line.split(' ') as [string, string, string | undefined];
  return { method, template, parts: template.split('/'), body: use === 'inspect' ? 'inspect' : 'stream' };
});

/** Routes of Appium's that the lab refuses on purpose, and why, so that a suite's author knows what to do instead. */
const NO_BROWSER = 'is a browser or webview command; this lab drives native apps and has no lab-managed Chrome or Safari driver yet.';
const EMULATOR = "drives an emulator's console, which Appium would reach on the lab's host; the lab's phones are real (or simulated) phones.";
const REFUSED: Array<[RegExp, string]> = [
  [/^appium\/app\/(strings|reset)$/, "reads the app's files on the lab's host; ask the app itself on the phone instead."],
  [/^(appium\/)?context$/, `(switching contexts) ${NO_BROWSER}`],
  [/^(url|forward|refresh|title|cookie(\/.*)?|frame(\/.*)?|print|window(\/new|\/maximize|\/minimize|\/fullscreen)?|:?\w+\/cdp\/execute)$/, NO_BROWSER],
  [/^appium\/device\/(finger_print|send_sms|gsm_call|gsm_signal|gsm_voice|power_capacity|power_ac|network_speed)$/, EMULATOR],
];

/** A path segment: what needs no percent-encoding, and not `.` or `..` (nor anything made only of dots). */
const SEGMENT = /^[A-Za-z0-9_.:~-]{1,256}$/;

/**
 * The path after `/session/{id}` (query and all, as it arrived on the socket) as a route of its own session: no dot
 * segments, no empty segments, no percent-encoding (so no encoded dots, slashes or backslashes), no backslashes, and a
 * template of the table for that method; else `unknown command`.
 */
export function parseCommand(method: string, rawRest: string): Command {
  const path = rawRest.split('?')[0]!;
  const unknown = (why: string) => new CommandError('unknown command', `${method} /session/{id}${path.slice(0, 200)} ${why}`);
  if (!path.startsWith('/')) throw unknown('is no WebDriver command this lab knows.');
  const segments = path.slice(1).split('/');
  for (const segment of segments) {
    if (!SEGMENT.test(segment) || /^\.+$/.test(segment)) {
      throw unknown('is no route of this session: a command\'s path takes no empty, dot or percent-encoded segments and no backslashes.');
    }
  }
  const route = TABLE.find((r) => r.method === method && r.parts.length === segments.length && r.parts.every((part, i) => part.startsWith(':') || part === segments[i]));
  if (route) return { method, segments, template: route.template, body: route.body };
  const joined = segments.join('/');
  const refused = REFUSED.find(([pattern]) => pattern.test(joined));
  if (refused) throw unknown(refused[1]);
  throw unknown('is no WebDriver command this lab forwards (docs/webdriver.md lists them).');
}

// ---- execute: `mobile:` extensions ----

/**
 * The `mobile:` extensions forwarded, per platform (the drivers' executeMethodMap names). A name in `ARGUMENTS` has
 * its argument object checked against its own allowlist: those are the extensions with arguments that would name a
 * host's path, URL or credentials (uploads of recordings).
 */
const MOBILE: Record<Platform, Set<string>> = {
  android: new Set([
    'shell', 'changePermissions', 'getPermissions', 'performEditorAction', 'getDeviceTime', 'getNotifications', 'listSms',
    'pushFile', 'pullFile', 'pullFolder', 'deleteFile', 'isAppInstalled', 'listApps', 'queryAppState', 'activateApp', 'removeApp',
    'terminateApp', 'clearApp', 'backgroundApp', 'startService', 'stopService', 'startActivity', 'broadcast', 'getContexts', 'lock',
    'unlock', 'isLocked', 'refreshGpsCache', 'startMediaProjectionRecording', 'isMediaProjectionRecordingRunning',
    'stopMediaProjectionRecording', 'getConnectivity', 'setConnectivity', 'hideKeyboard', 'isKeyboardShown', 'deviceidle', 'bluetooth',
    'nfc', 'setUiMode', 'getUiMode', 'sendTrimMemory', 'getPerformanceData', 'getPerformanceDataTypes', 'toggleGps', 'isGpsEnabled',
    'getDisplayDensity', 'getSystemBars', 'statusBar', 'getCurrentActivity', 'getCurrentPackage', 'setGeolocation', 'getGeolocation',
    'resetGeolocation', 'setStylusHandwriting', 'dragGesture', 'flingGesture', 'doubleClickGesture', 'clickGesture',
    'longClickGesture', 'pinchCloseGesture', 'pinchOpenGesture', 'swipeGesture', 'scrollGesture', 'scrollBackTo', 'scroll',
    'viewportScreenshot', 'viewportRect', 'viewportElementRect', 'deepLink', 'acceptAlert', 'dismissAlert', 'batteryInfo',
    'deviceInfo', 'getDeclaredOrientation', 'openNotifications', 'type', 'replaceElementValue', 'pressKey', 'screenshots',
    'scheduleAction', 'getActionHistory', 'unscheduleAction', 'setClipboard', 'getClipboard', 'resetAccessibilityCache',
    'listWindows', 'listDisplays',
  ]),
  ios: new Set([
    'tap', 'scroll', 'selectPickerWheelValue', 'sendMemoryWarning', 'swipe', 'pinch', 'doubleTap', 'twoFingerTap',
    'tapWithNumberOfTaps', 'touchAndHold', 'dragFromToForDuration', 'rotateElement', 'dragFromToWithVelocity', 'forcePress',
    'scrollToElement', 'alert', 'setPasteboard', 'getPasteboard', 'source', 'getContexts', 'isAppInstalled', 'removeApp', 'launchApp',
    'terminateApp', 'killApp', 'queryAppState', 'activateApp', 'listApps', 'clearApp', 'viewportScreenshot', 'viewportRect',
    'batteryInfo', 'performAccessibilityAudit', 'deviceInfo', 'getDeviceTime', 'activeAppInfo', 'deviceScreenInfo', 'pressButton',
    'rotateDigitalCrown', 'performHandGesture', 'getAppearance', 'setAppearance', 'getIncreaseContrast', 'setIncreaseContrast',
    'contentSize', 'setContentSize', 'getClipboard', 'setClipboard', 'siriCommand', 'pushFile', 'pullFile', 'pullFolder', 'deleteFile',
    'deleteFolder', 'startXCTestScreenRecording', 'getXCTestScreenRecordingInfo', 'stopXCTestScreenRecording', 'expectNotification',
    'performIoHidEvent', 'performIndigoHidEvent', 'resetLocationService', 'keys', 'deepLink', 'setSimulatedLocation',
    'getSimulatedLocation', 'resetSimulatedLocation', 'enableVoiceOver', 'disableVoiceOver', 'isVoiceOverEnabled', 'voiceOverMove',
    'voiceOverCurrentSpeech', 'shake', 'startScreenRecording', 'stopScreenRecording', 'hideKeyboard', 'isKeyboardShown', 'lock',
    'unlock', 'isLocked', 'backgroundApp',
  ]),
};

/** Options of a screen recording that stay on the phone or shape the video; the rest upload it or name host programs. */
const RECORDING_OPTIONS = ['timeLimit', 'forceRestart', 'videoSize', 'bitRate', 'bugReport', 'videoType', 'videoQuality', 'videoFps', 'fps', 'codec'];
const ARGUMENTS: Record<string, string[]> = {
  startMediaProjectionRecording: ['resolution', 'priority', 'maxDurationSec', 'filename'],
  stopMediaProjectionRecording: [],
  startScreenRecording: RECORDING_OPTIONS,
  stopScreenRecording: [],
  startXCTestScreenRecording: RECORDING_OPTIONS,
  stopXCTestScreenRecording: [],
};

/** Why the best-known refused extensions are refused. */
const MOBILE_REFUSED: Array<[RegExp, string]> = [
  [/^(installMultipleApks|installXCTestBundle)$/, "installs from a path that Appium would read on the lab's host; install an app with mobile: installApp and {appPath: \"lab://files/<id>\"} or an http(s) URL."],
  [/^(execEmuConsoleCommand|fingerprint|sendSms|gsmCall|gsmSignal|gsmVoice|powerAc|powerCapacity|networkSpeed|sensorSet|injectEmulatorCameraImage)$/, EMULATOR],
  [/^(simctl|pushNotification|clearKeychains|enrollBiometric|isBiometricEnrolled|sendBiometricMatch|getPermission|setPermission|resetPermission|configureLocalization|updateSafariPreferences)$/, "drives an iOS simulator on Appium's host; the lab's iPhones are phones."],
  [/^(getChromeCapabilities|startAutomationSession|stopAutomationSession|calibrateWebToRealCoordinatesTranslation)$/, NO_BROWSER],
];

/** The lab's own script: how a run says how it went. */
export const LAB_SCRIPT = 'benchtop: status';
/** The most a `benchtop: status` body may be: never sent on to Appium, whatever its size. */
export const LAB_SCRIPT_LIMIT = 64 * 1024;

/**
 * The clouds' own ways of saying how a run went, which a suite moving here keeps: BrowserStack's
 * `browserstack_executor: {"action": "setSessionStatus", ...}` (and its `annotate`, a note in the log), Sauce Labs'
 * `sauce:job-result=passed|failed` (and its `sauce:context=<note>`), LambdaTest's `lambda-status=passed|failed`. The
 * lab answers them as `benchtop: status`; Appium never sees them.
 */
const BROWSERSTACK = 'browserstack_executor:';
const SAUCE_RESULT = /^(?:sauce:job-result|lambda-status)=(passed|failed|true|false)$/;
const SAUCE_CONTEXT = 'sauce:context=';

export type Script =
  | { lab: { status: 'passed' | 'failed'; reason?: string } }
  /** A note for the run's log (BrowserStack's `annotate`): nothing else happens. */
  | { note: string }
  /** BrowserStack's `getSessionDetails`: the run as the lab keeps it, with the link to its page. */
  | { details: true }
  /** An app for the lab to install itself (`mobile: installApp`): lab://files/<id> or an http(s) URL, read later. */
  | { install: string }
  | { forward: { script: string; args: unknown[] }; name: string };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const invalid = (message: string) => new CommandError('invalid argument', message);

function jsonBody(text: string, shape: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw invalid(`The body must be JSON: ${shape}.`);
  }
}

/**
 * The body of `POST /execute/sync|async`, read: the lab's `benchtop: status` (at most 64 KiB), or a `mobile:` extension
 * on the platform's allowlist with its arguments checked; the body to forward is rebuilt from what was checked. Plain
 * JavaScript would run in a webview, which the lab does not drive.
 */
export function readScript(text: string, platform: Platform): Script {
  const body = jsonBody(text, '{"script": "mobile: <name>", "args": [{...}]}');
  if (!isObject(body) || typeof body.script !== 'string') throw invalid('The body must be {"script": "...", "args": [...]}.');
  const args = body.args ?? [];
  if (!Array.isArray(args)) throw invalid('"args" must be a list.');
  const script = body.script;
  const cloud = cloudScript(script.trim(), text.length);
  if (cloud) return cloud;
  if (script.trim().startsWith('benchtop:')) {
    const arg = args[0];
    if (text.length > LAB_SCRIPT_LIMIT) throw invalid(`A "${LAB_SCRIPT}" body is at most ${LAB_SCRIPT_LIMIT / 1024} KiB.`);
    if (script.trim() !== LAB_SCRIPT || !isObject(arg) || (arg.status !== 'passed' && arg.status !== 'failed')) {
      throw invalid(`The lab knows one script: "${LAB_SCRIPT}" with [{"status": "passed" | "failed", "reason": "..."}].`);
    }
    return { lab: { status: arg.status, ...(typeof arg.reason === 'string' ? { reason: arg.reason.slice(0, 1000) } : {}) } };
  }
  // Appium's own reading: a script that starts with "mobile:" names an extension; anything else runs in a webview.
  const mobile = /^mobile:\s*(\S+)\s*$/.exec(script);
  if (!mobile) throw invalid('Plain JavaScript runs in a webview, which this lab does not drive; a script here is "mobile: <extension>" or "benchtop: status".');
  const name = mobile[1]!;
  if (name === 'installApp') return { install: appPathOf(args[0], 'mobile: installApp') };
  if (!MOBILE[platform].has(name)) {
    const why = MOBILE_REFUSED.find(([pattern]) => pattern.test(name))?.[1] ?? `is not an extension this lab forwards on ${platform === 'ios' ? 'iOS' : 'Android'} (docs/webdriver.md lists them).`;
    throw invalid(`mobile: ${name} ${why}`);
  }
  if (args.length > 1 || (args.length === 1 && !isObject(args[0]))) throw invalid(`mobile: ${name} takes one JSON object of arguments.`);
  const allowed = ARGUMENTS[name];
  if (allowed && args[0]) {
    const extra = Object.keys(args[0] as object).find((key) => !allowed.includes(key));
    if (extra) throw invalid(`mobile: ${name} with "${extra}": the lab forwards ${allowed.length ? allowed.join(', ') : 'no arguments'} for it (an upload to a URL or a host's path is not one of them; the video comes back in the answer).`);
  }
  return { forward: { script: `mobile: ${name}`, args }, name };
}

/** A cloud's status script (BROWSERSTACK, SAUCE_RESULT) read as the lab's own; undefined for any other script. */
function cloudScript(script: string, length: number): Script | undefined {
  const sauce = SAUCE_RESULT.exec(script);
  if (sauce) return { lab: { status: sauce[1] === 'passed' || sauce[1] === 'true' ? 'passed' : 'failed' } };
  // Sauce Labs' note in a run's log: the note is the label its line in commands.log shows.
  if (script.startsWith(SAUCE_CONTEXT)) return { note: script.slice(SAUCE_CONTEXT.length, SAUCE_CONTEXT.length + 1000) };
  if (!script.startsWith(BROWSERSTACK)) return undefined;
  if (length > LAB_SCRIPT_LIMIT) throw invalid(`A "${BROWSERSTACK}" body is at most ${LAB_SCRIPT_LIMIT / 1024} KiB.`);
  let command: unknown;
  try {
    command = JSON.parse(script.slice(BROWSERSTACK.length));
  } catch {
    command = undefined;
  }
  const args = isObject(command) && isObject(command.arguments) ? command.arguments : {};
  if (isObject(command) && command.action === 'setSessionStatus' && (args.status === 'passed' || args.status === 'failed')) {
    return { lab: { status: args.status, ...(typeof args.reason === 'string' ? { reason: args.reason.slice(0, 1000) } : {}) } };
  }
  if (isObject(command) && command.action === 'annotate' && typeof args.data === 'string') return { note: args.data.slice(0, 1000) };
  if (isObject(command) && command.action === 'getSessionDetails') return { details: true };
  throw invalid(`${BROWSERSTACK} here takes {"action": "setSessionStatus", "arguments": {"status": "passed" | "failed", "reason": "..."}}, {"action": "annotate", "arguments": {"data": "..."}} or {"action": "getSessionDetails"}: the rest is BrowserStack's own.`);
}

/**
 * The app an install command names (`{appPath}`, as Appium's clients send it), which the lab installs itself; Appium's
 * install options are for its own install path, which the lab does not use, so none is taken.
 */
function appPathOf(body: unknown, command: string): string {
  if (!isObject(body) || typeof body.appPath !== 'string') throw invalid(`${command} takes {"appPath": "lab://files/<id>" or an http(s) URL}.`);
  const extra = Object.keys(body).find((key) => key !== 'appPath' && !(key === 'options' && isObject(body.options) && Object.keys(body.options).length === 0));
  if (extra) throw invalid(`${command} with "${extra}": the lab installs the app itself and takes no install options.`);
  return body.appPath;
}

/** A screen recording's `{options}`: the same allowlist as the `mobile:` recording extensions. */
export function checkRecording(text: string, template: string): void {
  const body = text === '' ? {} : jsonBody(text, '{"options": {...}}');
  const options = isObject(body) ? (body.options ?? {}) : undefined;
  if (!isObject(options)) throw invalid('The body must be {"options": {...}}.');
  const allowed = template.includes('start') ? RECORDING_OPTIONS : [];
  const extra = Object.keys(options).find((key) => !allowed.includes(key));
  if (extra) throw invalid(`${template} with options.${extra}: the lab forwards ${allowed.length ? allowed.join(', ') : 'no options'} (an upload to a URL or a host's path is not one of them; the video comes back in the answer).`);
}

// ---- settings ----

/**
 * Settings forwarded (the drivers' Settings API names); the ports of the phone's servers are the lab's (it forwards
 * them), and the rest are web or simulator settings.
 */
const SETTINGS: Record<Platform, Set<string>> = {
  android: new Set([
    'actionAcknowledgmentTimeout', 'allowInvisibleElements', 'ignoreUnimportantViews', 'elementResponseAttributes', 'enableMultiWindows',
    'enableTopmostWindowFromActivePackage', 'enableNotificationListener', 'keyInjectionDelay', 'scrollAcknowledgmentTimeout',
    'shouldUseCompactResponses', 'waitForIdleTimeout', 'waitForSelectorTimeout', 'normalizeTagNames', 'simpleBoundsCalculation',
    'trackScrollEvents', 'wakeLockTimeout', 'mjpegServerFramerate', 'mjpegScalingFactor', 'mjpegServerScreenshotQuality',
    'mjpegBilinearFiltering', 'useResourcesForOrientationDetection', 'enforceXPath1', 'limitXPathContextScope',
    'disableIdLocatorAutocompletion', 'alwaysTraversableViewClasses', 'includeExtrasInPageSource', 'includeA11yActionsInPageSource',
    'snapshotMaxDepth', 'currentDisplayId', 'mapTestTagToResourceId',
  ]),
  ios: new Set([
    'useJSONSource', 'shouldUseCompactResponses', 'elementResponseAttributes', 'mjpegServerScreenshotQuality', 'mjpegServerFramerate',
    'screenshotQuality', 'mjpegScalingFactor', 'pageSourceExcludedAttributes', 'keyboardAutocorrection', 'keyboardPrediction',
    'snapshotMaxDepth', 'useFirstMatch', 'boundElementsByIndex', 'acceptAlertButtonSelector', 'dismissAlertButtonSelector',
    'animationCoolOffTimeout', 'defaultActiveApplication', 'activeAppDetectionPoint', 'includeNonModalElements', 'respectSystemAlerts',
    'autoClickAlertSelector', 'maxTypingFrequency', 'limitXPathContextScope', 'useClearTextShortcut', 'waitForIdleTimeout',
    'customSnapshotTimeout', 'includeHittableInPageSource', 'includeNativeFrameInPageSource', 'includeMinMaxValueInPageSource',
    'enforceCustomSnapshots', 'dismissAutomaticKeyboardAutocorrect',
  ]),
};

/** Why one of these settings is not forwarded, or undefined when all are. */
export function refusedSetting(settings: Record<string, unknown>, platform: Platform): string | undefined {
  const name = Object.keys(settings).find((key) => !SETTINGS[platform].has(key));
  return name === undefined ? undefined : `the setting ${name} is not one this lab forwards on ${platform === 'ios' ? 'iOS' : 'Android'} (docs/webdriver.md lists them).`;
}

/** `POST /appium/settings`: `{"settings": {...}}` with every name on the allowlist. */
export function checkSettingsBody(text: string, platform: Platform): void {
  const body = jsonBody(text, '{"settings": {...}}');
  if (!isObject(body) || !isObject(body.settings)) throw invalid('The body must be {"settings": {...}}.');
  const why = refusedSetting(body.settings, platform);
  if (why) throw invalid(`Refused: ${why}`);
}

// ---- Appium's answers ----

/**
 * An error answer of Appium's without what describes the lab's host: its stack trace emptied, and the host's
 * directories (`roots`: the data dir, the install, the Android SDK, HOME, the temp dir) cut out of its message with whatever path
 * follows them. Anything else (a success, a body that is not JSON) is returned as it came.
 */
export function withoutHostDetails(body: Buffer, roots: ReadonlyArray<string | undefined>): Buffer {
  let answer: unknown;
  try {
    answer = JSON.parse(body.toString('utf8'));
  } catch {
    return body;
  }
  if (!isObject(answer) || !isObject(answer.value) || typeof answer.value.error !== 'string') return body;
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // Longest first: the data dir is inside HOME, and the whole of it goes.
  const dirs = roots.filter((root): root is string => root !== undefined && root.length > 1).sort((a, b) => b.length - a.length).map(escape);
  const paths = new RegExp(`(?:file://)?(?:${dirs.join('|')})[^\\s'"\`,;()]*`, 'g');
  const clean = (text: unknown) => (typeof text === 'string' && dirs.length > 0 ? text.replace(paths, '<lab>') : text);
  return Buffer.from(JSON.stringify({ ...answer, value: { ...answer.value, message: clean(answer.value.message), stacktrace: '' } }));
}

/**
 * A body the lab reads before Appium sees it, by the route it came to: a script (the lab's own, or a `mobile:`
 * extension rebuilt from what was checked), settings, or a screen recording's options.
 */
export function readInspected(template: string, text: string, platform: Platform): Exclude<Script, { forward: unknown }> | { forward: string } {
  if (template.startsWith('execute/')) {
    const script = readScript(text, platform);
    return 'forward' in script ? { forward: JSON.stringify(script.forward) } : script;
  }
  if (template === 'appium/device/install_app') return { install: appPathOf(jsonBody(text, '{"appPath": "..."}'), 'install_app') };
  if (template === 'appium/settings') checkSettingsBody(text, platform);
  else checkRecording(text, template);
  return { forward: text };
}

/**
 * Commands after which no screenrecord runs on an Android phone: Appium's start and stop of a suite's own recording
 * end every screenrecord by name (the lab's recorder too) and wait until none is left.
 */
export const endsScreenRecorders = (template: string, platform: Platform): boolean =>
  platform === 'android' && (template === 'appium/start_recording_screen' || template === 'appium/stop_recording_screen');

// ---- the run's log ----

/** Finds: their body is read (it is small), so that the run's log names the locator. */
const FINDS = new Set(['element', 'elements', 'element/:id/element', 'element/:id/elements']);
export const isFind = (template: string): boolean => FINDS.has(template);

/** The most of a locator or a script the run's log keeps. */
const LABEL_LIMIT = 200;
const clip = (text: string, limit = LABEL_LIMIT) => (text.length > limit ? `${text.slice(0, limit - 1)}…` : text);

/**
 * What a command was, in words for the run's log, or undefined when its route says it all: a script's name
 * (`mobile: swipe`; a plain script cut short, never its whole text) and a find's locator (`xpath //...`).
 */
export function commandLabel(template: string, text: string): string | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(body)) return undefined;
  if (template.startsWith('execute/') && typeof body.script === 'string') {
    const script = body.script.trim().replace(/\s+/g, ' ');
    // A cloud's status script is named by its status, not its whole JSON.
    if (script.startsWith(BROWSERSTACK)) {
      const read = (() => {
        try {
          return cloudScript(script, 0);
        } catch {
          return undefined;
        }
      })();
      if (read && 'lab' in read) return `${BROWSERSTACK} setSessionStatus ${read.lab.status}`;
      if (read && 'note' in read) return clip(`${BROWSERSTACK} annotate ${read.note}`, 80);
      if (read && 'details' in read) return `${BROWSERSTACK} getSessionDetails`;
      return clip(script, 60);
    }
    return /^(mobile:|benchtop:|sauce:|lambda-status=)/.test(script) ? clip(script, 80) : clip(script, 60);
  }
  if (isFind(template) && typeof body.using === 'string' && typeof body.value === 'string') return clip(`${body.using} ${body.value}`);
  return undefined;
}

/** W3C's key of an element reference (Appium sends JSONWP's `ELEMENT` beside it). */
const ELEMENT_KEY = 'element-6066-11e4-a52e-4f735466cecf';
/** A find's answer larger than this is not read for its elements (a page of them names nothing a person reads). */
const FOUND_ANSWER_LIMIT = 256 * 1024;
/** The most elements of one `elements` answer that the run's log remembers by their locator. */
const FOUND_LIMIT = 100;

/** The ids of the elements a find answered with, in order (at most FOUND_LIMIT); none of an answer it cannot read. */
export function foundElements(answer: Buffer): string[] {
  if (answer.length > FOUND_ANSWER_LIMIT) return [];
  let value: unknown;
  try {
    value = (JSON.parse(answer.toString('utf8')) as { value?: unknown }).value;
  } catch {
    return [];
  }
  const references = Array.isArray(value) ? value.slice(0, FOUND_LIMIT) : [value];
  return references.flatMap((reference) => {
    const id = isObject(reference) ? (reference[ELEMENT_KEY] ?? reference.ELEMENT) : undefined;
    return typeof id === 'string' && id.length > 0 ? [id] : [];
  });
}

/** The element a command acts on (`element/:id/click`: its id), or undefined for a command of no element. */
export function elementOf(command: Pick<Command, 'segments' | 'template'>): string | undefined {
  const at = command.template.split('/').indexOf(':id');
  return at >= 0 ? command.segments[at] : undefined;
}
