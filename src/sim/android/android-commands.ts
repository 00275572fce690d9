import { createHash } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import {
  ADB_KEYBOARD_IME,
  BROWSER_PACKAGE,
  LATIN_IME,
  LAUNCHER_PACKAGE,
  parseKeycode,
  SETTINGS_PACKAGE,
  type Device,
  type InstalledApp,
  type SettingsPage,
} from './device.js';
import { listInstrumentation } from './instrumentation.js';
import { logcat, type LogPriority } from './logcat.js';
import { FsError } from './mem-fs.js';
import { appUser, type NativeProcess, type ProcessTable } from './processes.js';
import type { Screen } from './screen.js';
import type { CommandContext, CommandFn } from './shell.js';
import { shortActivity } from './ui.js';

/**
 * Android's own shell tools (getprop, input, am, pm, cmd, wm, settings, dumpsys, screencap, uiautomator, monkey,
 * ime, svc, logcat), printing what the real ones print on Android 10-14 for the cases ADB clients parse.
 */

const LAUNCHER_ACTIVITY = 'com.android.launcher3.uioverrides.QuickstepLauncher';

async function print(ctx: CommandContext, text: string | Buffer): Promise<void> {
  await ctx.stdout.write(text);
}

async function complain(ctx: CommandContext, text: string): Promise<void> {
  await ctx.stderr.write(text.endsWith('\n') ? text : text + '\n');
}

/** A stable short hash, like the identity hash codes in ActivityRecord{...} and Window{...}. */
function hashCode(s: string): string {
  return createHash('md5').update(s).digest('hex').slice(0, 7);
}

function flatten(pkg: string, cls: string): string {
  return `${pkg}/${shortActivity(pkg, cls)}`;
}

// ---------------------------------------------------------------------------------------------------------
// Intents, as `am` and `cmd package` parse them (Intent.parseCommandArgs)

interface Intent {
  action?: string;
  data?: string;
  type?: string;
  categories: string[];
  component?: { pkg: string; cls: string };
  pkg?: string;
  flags?: string;
  extras: Map<string, string>;
}

const FLAG_OPTIONS = new Set([
  '--grant-read-uri-permission',
  '--grant-write-uri-permission',
  '--grant-persistable-uri-permission',
  '--grant-prefix-uri-permission',
  '--exclude-stopped-packages',
  '--include-stopped-packages',
  '--debug-log-resolution',
  '--activity-brought-to-front',
  '--activity-clear-top',
  '--activity-clear-when-task-reset',
  '--activity-exclude-from-recents',
  '--activity-launched-from-history',
  '--activity-multiple-task',
  '--activity-no-animation',
  '--activity-no-history',
  '--activity-no-user-action',
  '--activity-previous-is-top',
  '--activity-reorder-to-front',
  '--activity-reset-task-if-needed',
  '--activity-single-top',
  '--activity-clear-task',
  '--activity-task-on-home',
  '--receiver-registered-only',
  '--receiver-replace-pending',
  '--receiver-foreground',
  '--receiver-no-abort',
  '--receiver-include-background',
  '--selector',
]);

class UsageError extends Error {}

function parseComponent(spec: string): { pkg: string; cls: string } | undefined {
  const slash = spec.indexOf('/');
  if (slash <= 0) return undefined;
  const pkg = spec.slice(0, slash);
  const rest = spec.slice(slash + 1);
  return { pkg, cls: rest.startsWith('.') ? pkg + rest : rest };
}

/** Parses intent arguments, handing options it does not know to `other` (which returns how many it took). */
function parseIntent(args: string[], other: (opt: string, next: string | undefined) => number = () => -1): Intent {
  const intent: Intent = { categories: [], extras: new Map() };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const next = args[i + 1];
    const need = () => {
      const value = args[i + 1];
      if (value === undefined) throw new UsageError(`Error: No argument supplied for ${a} option`);
      i++;
      return value;
    };
    switch (a) {
      case '-a':
        intent.action = need();
        break;
      case '-d':
        intent.data = need();
        break;
      case '-t':
        intent.type = need();
        break;
      case '-c':
        intent.categories.push(need());
        break;
      case '-n': {
        const spec = need();
        const c = parseComponent(spec);
        if (!c) throw new UsageError(`Error: Bad component name: ${spec}`);
        intent.component = c;
        break;
      }
      case '-p':
        intent.pkg = need();
        break;
      case '-f':
        intent.flags = need();
        break;
      case '-e':
      case '--es':
      case '--ez':
      case '--ei':
      case '--el':
      case '--ef':
      case '--ed':
      case '--eu':
      case '--ecn':
      case '--eia':
      case '--eial':
      case '--ela':
      case '--elal':
      case '--efa':
      case '--efal':
      case '--esa':
      case '--esal': {
        const key = need();
        intent.extras.set(key, need());
        break;
      }
      case '--esn':
        intent.extras.set(need(), '');
        break;
      default: {
        if (FLAG_OPTIONS.has(a)) break;
        if (a.startsWith('-')) {
          const took = other(a, next);
          if (took < 0) throw new UsageError(`Error: Unknown option: ${a}`);
          i += took;
          break;
        }
        // A trailing bare argument is a URI, a component or a package.
        if (a.includes(':')) intent.data = a;
        else if (a.includes('/')) intent.component = parseComponent(a);
        else intent.pkg = a;
      }
    }
  }
  return intent;
}

/** Uri.toSafeString: web URIs lose their path in logs. */
function safeUri(uri: string): string {
  const m = /^(https?|ftp|rtsp):\/\/([^/?#]*)/i.exec(uri);
  if (m) return `${m[1]}://${m[2]}/...`;
  return uri;
}

function describeIntent(intent: Intent, extraFlags?: string): string {
  const parts: string[] = [];
  if (intent.action) parts.push(`act=${intent.action}`);
  if (intent.categories.length) parts.push(`cat=[${intent.categories.join(',')}]`);
  if (intent.data) parts.push(`dat=${safeUri(intent.data)}`);
  if (intent.type) parts.push(`typ=${intent.type}`);
  const flg = extraFlags ?? intent.flags;
  if (flg) parts.push(`flg=${flg}`);
  if (intent.pkg) parts.push(`pkg=${intent.pkg}`);
  if (intent.component) parts.push(`cmp=${flatten(intent.component.pkg, intent.component.cls)}`);
  if (intent.extras.size) parts.push('(has extras)');
  return `Intent { ${parts.join(' ')} }`;
}

const SETTINGS_ACTIONS: Record<string, SettingsPage> = {
  'android.settings.SETTINGS': 'main',
  'android.settings.WIFI_SETTINGS': 'wifi',
  'android.settings.BLUETOOTH_SETTINGS': 'bluetooth',
  'android.settings.DISPLAY_SETTINGS': 'display',
  'android.settings.DEVICE_INFO_SETTINGS': 'about',
};

function resolveBrief(pkg: string, cls: string, isDefault: boolean): string {
  return `priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 isDefault=${isDefault}\n${flatten(pkg, cls)}\n`;
}

// ---------------------------------------------------------------------------------------------------------

/** The Appium Settings app: its main activity starts its foreground service and finishes at once. */
const APPIUM_SETTINGS = 'io.appium.settings';
const APPIUM_SETTINGS_ACTIVITY = `${APPIUM_SETTINGS}.Settings`;
const APPIUM_SETTINGS_SERVICE = `${APPIUM_SETTINGS}.ForegroundService`;

interface RunningService {
  pkg: string;
  cls: string;
  foreground: boolean;
  process: NativeProcess;
  startedAt: number;
}

/** What the phone runs besides its shell tools: app processes, and `am instrument`. */
export interface CommandHost {
  processes: ProcessTable;
  instrument: CommandFn;
}

export function androidCommands(device: Device, screen: Screen, host: CommandHost): Map<string, CommandFn> {
  const commands = new Map<string, CommandFn>();
  const o = device.options;

  // ---- app processes and their services ----

  const appProcess = (app: InstalledApp): NativeProcess => {
    const running = host.processes.byName(app.packageName).find((p) => !p.signal.aborted);
    if (running) return running;
    const proc = host.processes.spawn(app.packageName, new AbortController().signal, { user: appUser(app.uid), packages: [app.packageName] });
    proc.signal.addEventListener('abort', () => proc.exit(), { once: true });
    return proc;
  };
  const services = new Map<string, RunningService>();
  const startService = (app: InstalledApp, cls: string, foreground: boolean) => {
    const key = `${app.packageName}/${cls}`;
    const running = services.get(key);
    if (running && !running.process.signal.aborted) {
      running.foreground ||= foreground;
      return;
    }
    services.set(key, { pkg: app.packageName, cls, foreground, process: appProcess(app), startedAt: Date.now() });
  };

  // ---- properties ----

  commands.set('getprop', async (ctx) => {
    const [key, fallback] = ctx.args;
    if (key === undefined) {
      const keys = [...device.props.keys()].sort();
      await print(ctx, keys.map((k) => `[${k}]: [${device.props.get(k)}]\n`).join(''));
      return 0;
    }
    await print(ctx, `${device.props.get(key) ?? fallback ?? ''}\n`);
    return 0;
  });

  commands.set('setprop', async (ctx) => {
    const [key, value] = ctx.args;
    if (key === undefined || value === undefined) {
      await complain(ctx, 'usage: setprop NAME VALUE');
      return 1;
    }
    if (key.startsWith('ro.') && device.props.has(key)) {
      await complain(ctx, `Failed to set property '${key}' to '${value}'.\nSee dmesg for error reason.`);
      return 1;
    }
    device.props.set(key, value);
    return 0;
  });

  // ---- input ----

  let touchDown: { x: number; y: number; at: number } | undefined;
  const coords = (args: string[], n: number): number[] | undefined => {
    const values = args.slice(0, n).map(Number);
    return values.length === n && values.every(Number.isFinite) ? values.map((v) => Math.round(v)) : undefined;
  };

  const input: CommandFn = async (ctx) => {
    let args = [...ctx.args];
    const sources = new Set(['keyboard', 'gamepad', 'touchscreen', 'touchpad', 'touchnavigation', 'stylus', 'trackball', 'mouse', 'dpad', 'joystick']);
    if (args[0] && sources.has(args[0])) args = args.slice(1);
    if (args[0] === '-d') args = args.slice(2);
    const [command, ...rest] = args;
    const invalid = async () => {
      await complain(ctx, `Error: Invalid arguments for command: ${command}`);
      return 1;
    };
    switch (command) {
      case 'text': {
        if (rest[0] === undefined) return invalid();
        // `%s` is how callers pass a space through the shell; anything beyond ASCII has no key to type.
        const text = rest[0].replace(/%s/g, ' ');
        device.typeText([...text].filter((ch) => ch >= ' ' && ch <= '~').join(''));
        return 0;
      }
      case 'keyevent':
      case 'press': {
        const keys = command === 'press' ? ['DPAD_CENTER'] : rest.filter((a) => !a.startsWith('--'));
        if (keys.length === 0) return invalid();
        for (const k of keys) {
          const code = parseKeycode(k);
          if (code === undefined) {
            await complain(ctx, `Error: Unknown keycode: ${k}`);
            return 1;
          }
          device.keyevent(code);
        }
        return 0;
      }
      case 'keycombination': {
        // Android 13's `input keycombination`: the keys held together. Ctrl with A, C, X or V is what text fields act on.
        const codes = rest.filter((a) => !a.startsWith('-')).map(parseKeycode);
        if (codes.length < 2 || codes.some((c) => c === undefined)) return invalid();
        const ctrl = codes.some((c) => c === 113 || c === 114);
        const key = codes.find((c) => c !== 113 && c !== 114);
        if (ctrl && key === 29) device.selectAll();
        else if (ctrl && key === 31) device.keyevent(278);
        else if (ctrl && key === 52) device.keyevent(277);
        else if (ctrl && key === 50) device.keyevent(279);
        else for (const c of codes) device.keyevent(c!);
        return 0;
      }
      case 'tap': {
        const c = coords(rest, 2);
        if (!c) return invalid();
        screen.tap(c[0]!, c[1]!);
        return 0;
      }
      case 'swipe':
      case 'draganddrop': {
        const c = coords(rest, 4);
        if (!c) return invalid();
        const duration = rest[4] !== undefined ? Number(rest[4]) : 300;
        if (!Number.isFinite(duration)) return invalid();
        // The real tool injects the gesture in real time and returns when the finger lifts.
        await delay(Math.min(Math.max(duration, 0), 10_000), undefined, { signal: ctx.signal }).catch(() => undefined);
        screen.swipe(c[0]!, c[1]!, c[2]!, c[3]!, duration);
        return 0;
      }
      case 'motionevent': {
        const [action, ...xy] = rest;
        const c = coords(xy, 2);
        if (!action || !c) return invalid();
        const upper = action.toUpperCase();
        if (upper === 'DOWN') touchDown = { x: c[0]!, y: c[1]!, at: Date.now() };
        else if (upper === 'UP' && touchDown) {
          screen.swipe(touchDown.x, touchDown.y, c[0]!, c[1]!, Date.now() - touchDown.at);
          touchDown = undefined;
        } else if (upper === 'CANCEL') touchDown = undefined;
        return 0;
      }
      case 'roll':
        return 0;
      default:
        await complain(
          ctx,
          'Usage: input [<source>] [-d DISPLAY_ID] <command> [<arg>...]\n\nThe commands and default sources are:\n' +
            '      text <string> (Default: touchscreen)\n      keyevent [--longpress|--doubletap] <key code number or name> ... (Default: keyboard)\n' +
            '      tap <x> <y> (Default: touchscreen)\n      swipe <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)\n' +
            '      draganddrop <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)\n      press (Default: trackball)\n' +
            '      roll <dx> <dy> (Default: trackball)\n      motionevent <DOWN|UP|MOVE|CANCEL> <x> <y> (Default: touchscreen)',
        );
        return 1;
    }
  };
  commands.set('input', input);

  // ---- wm ----

  const wm: CommandFn = async (ctx) => {
    const [sub, ...rest] = ctx.args;
    switch (sub) {
      case 'size':
        if (rest.length === 0) {
          await print(ctx, `Physical size: ${o.width}x${o.height}\n`);
          return 0;
        }
        if (rest[0] === 'reset') return 0;
        await complain(ctx, 'Error: this display cannot be resized');
        return 1;
      case 'density':
        if (rest.length === 0) {
          await print(ctx, `Physical density: ${o.density}\n`);
          return 0;
        }
        return rest[0] === 'reset' ? 0 : 1;
      case 'dismiss-keyguard':
        device.unlock();
        return 0;
      case 'user-rotation': {
        const [mode, value] = rest;
        if (mode === undefined) {
          await print(ctx, `${device.settings.system.get('accelerometer_rotation') === '1' ? 'free' : 'lock'} ${device.rotation}\n`);
          return 0;
        }
        if (mode === 'free') device.settings.system.set('accelerometer_rotation', '1');
        else if (mode === 'lock') {
          device.settings.system.set('accelerometer_rotation', '0');
          if (value !== undefined) device.settings.system.set('user_rotation', String(Number(value) & 3));
        } else return 1;
        device.changed();
        return 0;
      }
      default:
        await complain(ctx, `Unknown command: ${sub ?? ''}`);
        return 1;
    }
  };
  commands.set('wm', wm);

  // ---- settings ----

  const settings: CommandFn = async (ctx) => {
    const args = [...ctx.args];
    if (args[0] === '--user') args.splice(0, 2);
    const [verb, ns, key, value] = args;
    const table = ns === 'system' || ns === 'secure' || ns === 'global' ? device.settings[ns] : undefined;
    if (!verb || !table) {
      await complain(ctx, 'usage:  settings [--user <USER_ID> | current] get namespace key\n        settings [--user <USER_ID> | current] put namespace key value');
      return 1;
    }
    switch (verb) {
      case 'get':
        await print(ctx, `${(key && table.get(key)) ?? 'null'}\n`);
        return 0;
      case 'put':
        if (!key || value === undefined) return 1;
        table.set(key, value);
        device.changed();
        return 0;
      case 'delete':
        await print(ctx, `Deleted ${key && table.delete(key) ? 1 : 0} rows\n`);
        device.changed();
        return 0;
      case 'list':
        await print(ctx, [...table.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}=${v}\n`).join(''));
        return 0;
      default:
        return 1;
    }
  };
  commands.set('settings', settings);

  // ---- am ----

  const appOf = (pkg: string): InstalledApp | undefined => device.apps.get(pkg);

  const amStart = async (ctx: CommandContext, args: string[]): Promise<number> => {
    let wait = false;
    let stopFirst = false;
    let intent: Intent;
    try {
      intent = parseIntent(args, (opt, next) => {
        if (opt === '-W') wait = true;
        else if (opt === '-S') stopFirst = true;
        else if (opt === '-D' || opt === '-N' || opt === '--track-allocation') return 0;
        else if (['-P', '--start-profiler', '--sampling', '--attach-agent', '-R', '--user', '--display', '--windowingMode', '--activityType', '--task'].includes(opt)) {
          return next === undefined ? -1 : 1;
        } else return -1;
        return 0;
      });
    } catch (err) {
      await complain(ctx, (err as Error).message);
      return 1;
    }
    await print(ctx, `Starting: ${describeIntent(intent)}\n`);
    const started = Date.now();
    const report = async (pkg: string, cls: string, result: 'started' | 'brought-to-front') => {
      if (result === 'brought-to-front') await print(ctx, 'Warning: Activity not started, its current task has been brought to the front\n');
      if (!wait) return;
      const took = Date.now() - started + 180;
      await print(
        ctx,
        `Status: ok\nLaunchState: ${result === 'started' ? 'COLD' : 'HOT'}\nActivity: ${flatten(pkg, cls)}\nTotalTime: ${took}\nWaitTime: ${took + 4}\nComplete\n`,
      );
    };
    const unresolved = async () => {
      await complain(ctx, `Error: Activity not started, unable to resolve ${describeIntent(intent, '0x10000000')}`);
      return 1;
    };

    if (intent.component) {
      const { pkg, cls } = intent.component;
      const app = appOf(pkg);
      if (!app || !app.activities.includes(cls)) {
        await complain(ctx, `Error type 3\nError: Activity class {${pkg}/${cls}} does not exist.`);
        return 1;
      }
      if (stopFirst) device.forceStop(pkg);
      if (pkg === APPIUM_SETTINGS && cls === APPIUM_SETTINGS_ACTIVITY) {
        // Settings.onCreate starts ForegroundService and calls finish(): what was in front stays there.
        if (app.services?.includes(APPIUM_SETTINGS_SERVICE)) startService(app, APPIUM_SETTINGS_SERVICE, true);
        await report(pkg, cls, 'started');
        return 0;
      }
      const result = device.launch(pkg, cls);
      if (result === 'not-found') return unresolved();
      await report(pkg, cls, result);
      return 0;
    }
    const action = intent.action;
    if (action && SETTINGS_ACTIONS[action] !== undefined) {
      device.openSettingsPage(SETTINGS_ACTIONS[action]!);
      await report(SETTINGS_PACKAGE, 'com.android.settings.Settings', 'started');
      return 0;
    }
    if (action === 'android.settings.APPLICATION_DETAILS_SETTINGS' && intent.data?.startsWith('package:')) {
      const pkg = intent.data.slice('package:'.length);
      if (!appOf(pkg)) return unresolved();
      device.openSettingsPage(`appinfo:${pkg}`);
      await report(SETTINGS_PACKAGE, 'com.android.settings.Settings', 'started');
      return 0;
    }
    if (action === 'android.intent.action.VIEW' && intent.data && /^https?:/i.test(intent.data)) {
      if (intent.pkg && intent.pkg !== BROWSER_PACKAGE) return unresolved();
      if (stopFirst) device.forceStop(BROWSER_PACKAGE);
      device.openUrl(intent.data);
      await report(BROWSER_PACKAGE, appOf(BROWSER_PACKAGE)!.launcherActivity!, 'started');
      return 0;
    }
    if (action === 'android.intent.action.MAIN' && intent.categories.includes('android.intent.category.HOME')) {
      device.showHome();
      await report(LAUNCHER_PACKAGE, LAUNCHER_ACTIVITY, 'started');
      return 0;
    }
    if ((action === undefined || action === 'android.intent.action.MAIN') && intent.pkg) {
      const app = appOf(intent.pkg);
      if (!app?.launcherActivity) return unresolved();
      if (stopFirst) device.forceStop(app.packageName);
      const result = device.launch(app.packageName);
      if (result === 'not-found') return unresolved();
      await report(app.packageName, app.launcherActivity, result);
      return 0;
    }
    return unresolved();
  };

  const adbKeyboard = (intent: Intent) => {
    if (device.settings.secure.get('default_input_method') !== ADB_KEYBOARD_IME) return;
    const msg = intent.extras.get('msg');
    switch (intent.action) {
      case 'ADB_INPUT_TEXT':
        if (msg !== undefined) device.typeText(msg);
        break;
      case 'ADB_INPUT_B64':
        if (msg !== undefined) device.typeText(Buffer.from(msg, 'base64').toString('utf8'));
        break;
      case 'ADB_INPUT_CHARS': {
        const chars = intent.extras.get('chars');
        if (chars) device.typeText(String.fromCodePoint(...chars.split(',').map(Number)));
        break;
      }
      case 'ADB_INPUT_CODE': {
        const code = Number(intent.extras.get('code'));
        if (Number.isFinite(code)) device.keyevent(code);
        break;
      }
      case 'ADB_EDITOR_CODE':
        device.keyevent(66);
        break;
      case 'ADB_CLEAR_TEXT':
        device.clearFocusedText();
        break;
    }
  };

  /**
   * The Appium Settings app's receivers answer RESULT_OK (-1); the clipboard one with the clipboard's text in base64
   * as the result data. Undefined when the broadcast is not for one of them.
   */
  const appiumSettingsReceiver = (intent: Intent): string | undefined => {
    const to = intent.component;
    if (to?.pkg !== APPIUM_SETTINGS || !to.cls.startsWith(`${APPIUM_SETTINGS}.receivers.`) || !appOf(APPIUM_SETTINGS)) return undefined;
    // WiFiConnectionSettingReceiver: how Appium turns Wi-Fi on and off below Android 11, which has no shell command for it.
    if (intent.action === `${APPIUM_SETTINGS}.wifi`) {
      const status = intent.extras.get('setstatus');
      if (status === 'enable' || status === 'disable') device.setWifi(status === 'enable');
      return 'result=-1';
    }
    if (intent.action === `${APPIUM_SETTINGS}.clipboard.get`) return `result=-1, data="${Buffer.from(device.clipboard, 'utf8').toString('base64')}"`;
    return 'result=-1';
  };

  const am: CommandFn = async (ctx) => {
    const [sub, ...rest] = ctx.args;
    switch (sub) {
      case 'start':
      case 'start-activity':
        return amStart(ctx, rest);
      case 'force-stop':
      case 'kill':
      case 'stop-app': {
        const pkg = rest.filter((a) => !a.startsWith('--') && a !== '0' && a !== 'all' && a !== 'current').pop();
        if (pkg) device.forceStop(pkg);
        return 0;
      }
      case 'kill-all':
        return 0;
      case 'broadcast': {
        let intent: Intent;
        try {
          intent = parseIntent(rest, (opt, next) => (['--user', '--receiver-permission', '--allow-background-activity-starts'].includes(opt) ? (next === undefined ? -1 : 1) : -1));
        } catch (err) {
          await complain(ctx, (err as Error).message);
          return 1;
        }
        await print(ctx, `Broadcasting: ${describeIntent(intent, '0x400000')}\n`);
        adbKeyboard(intent);
        await print(ctx, `Broadcast completed: ${appiumSettingsReceiver(intent) ?? 'result=0'}\n`);
        return 0;
      }
      case 'startservice':
      case 'start-service':
      case 'start-foreground-service': {
        let intent: Intent;
        try {
          intent = parseIntent(rest, (opt, next) => (opt === '--user' ? (next === undefined ? -1 : 1) : -1));
        } catch (err) {
          await complain(ctx, (err as Error).message);
          return 1;
        }
        await print(ctx, `Starting service: ${describeIntent(intent)}\n`);
        const app = intent.component && appOf(intent.component.pkg);
        if (!app || !intent.component || !app.services?.includes(intent.component.cls)) {
          await complain(ctx, 'Error: Not found; no service started.');
          return 1;
        }
        startService(app, intent.component.cls, sub === 'start-foreground-service');
        return 0;
      }
      case 'instrument':
        return host.instrument({ ...ctx, args: rest });
      case 'get-current-user':
        await print(ctx, '0\n');
        return 0;
      default:
        await complain(ctx, `Error: Unknown command: ${sub ?? ''}`);
        return 1;
    }
  };
  commands.set('am', am);

  // ---- monkey ----

  commands.set('monkey', async (ctx) => {
    const args = ctx.args;
    const packages: string[] = [];
    const categories: string[] = [];
    let count: number | undefined;
    for (let i = 0; i < args.length; i++) {
      const a = args[i]!;
      if (a === '-p') packages.push(args[++i] ?? '');
      else if (a === '-c') categories.push(args[++i] ?? '');
      else if (a === '-s' || a === '--throttle' || a === '--pct-touch' || a === '--pct-motion' || a === '--pct-syskeys' || a === '--pct-appswitch') i++;
      else if (/^\d+$/.test(a)) count = Number(a);
    }
    const echoed = `${args.map((a) => `  bash arg: ${a}\n`).join('')}args: [${args.join(', ')}]\n${args.map((a) => ` arg: "${a}"\n`).join('')}`;
    await print(ctx, echoed);
    if (count === undefined) {
      await complain(ctx, '** Error: Count not specified');
      return 1;
    }
    for (const p of packages) await print(ctx, `data="${p}"\n`);
    for (const c of categories) await print(ctx, `data="${c}"\n`);
    const launchable = packages.map((p) => appOf(p)).filter((a): a is InstalledApp => !!a?.launcherActivity);
    if (launchable.length === 0) {
      await print(ctx, '** No activities found to run, monkey aborted.\n');
      return 252;
    }
    const started = Date.now();
    if (count > 0) device.launch(launchable[0]!.packageName);
    const took = Date.now() - started + 30;
    await print(ctx, `Events injected: ${count}\n## Network stats: elapsed time=${took}ms (0ms mobile, 0ms wifi, ${took}ms not connected)\n`);
    return 0;
  });

  // ---- pm / cmd package ----

  const pmList = async (ctx: CommandContext, args: string[]) => {
    const what = args[0];
    if (what === 'features') {
      const features = ['android.hardware.bluetooth', 'android.hardware.camera', 'android.hardware.screen.portrait', 'android.hardware.touchscreen', 'android.hardware.wifi', 'android.software.input_methods'];
      await print(ctx, features.map((f) => `feature:${f}\n`).join(''));
      return 0;
    }
    if (what === 'users') {
      await print(ctx, 'Users:\n\tUserInfo{0:Owner:c13} running\n');
      return 0;
    }
    if (what === 'instrumentation') {
      await print(ctx, listInstrumentation(device, args.slice(1).find((a) => !a.startsWith('-'))));
      return 0;
    }
    if (what === 'permission-groups') return 0;
    if (what !== 'packages') {
      await complain(ctx, `Error: unknown list type '${what ?? ''}'`);
      return 1;
    }
    const opts = new Set<string>();
    let filter: string | undefined;
    for (let i = 1; i < args.length; i++) {
      const a = args[i]!;
      if (a === '--user' || a === '--uid' || a === '--show-versioncode') {
        if (a !== '--show-versioncode') i++;
        else opts.add('versioncode');
      } else if (a.startsWith('-')) for (const f of a.slice(1)) opts.add(f);
      else filter = a;
    }
    let apps = [...device.apps.values()];
    if (opts.has('3')) apps = apps.filter((a) => !a.system);
    if (opts.has('s')) apps = apps.filter((a) => a.system);
    if (opts.has('d')) apps = [];
    if (filter) apps = apps.filter((a) => a.packageName.includes(filter!));
    const lines = apps.map((a) => {
      let line = 'package:' + (opts.has('f') ? `${a.apkPath}=` : '') + a.packageName;
      if (opts.has('versioncode')) line += ` versionCode:${a.versionCode}`;
      if (opts.has('U')) line += ` uid:${a.uid}`;
      return line + '\n';
    });
    await print(ctx, lines.join(''));
    return 0;
  };

  const queryActivities = async (ctx: CommandContext, args: string[], resolveOnly: boolean) => {
    let brief = false;
    let components = false;
    let intent: Intent;
    try {
      intent = parseIntent(args, (opt, next) => {
        if (opt === '--brief') brief = true;
        else if (opt === '--components') components = true;
        else if (opt === '--user') return next === undefined ? -1 : 1;
        else return -1;
        return 0;
      });
    } catch (err) {
      await complain(ctx, (err as Error).message);
      return 1;
    }
    const matches: Array<{ pkg: string; cls: string; isDefault: boolean }> = [];
    const home = intent.categories.includes('android.intent.category.HOME');
    if (home) matches.push({ pkg: LAUNCHER_PACKAGE, cls: LAUNCHER_ACTIVITY, isDefault: true });
    else if (intent.component) {
      const app = appOf(intent.component.pkg);
      if (app?.activities.includes(intent.component.cls)) matches.push({ pkg: app.packageName, cls: intent.component.cls, isDefault: false });
    } else if (!intent.action || intent.action === 'android.intent.action.MAIN') {
      const apps = [...device.apps.values()].filter((a) => a.launcherActivity && (!intent.pkg || a.packageName === intent.pkg));
      apps.sort((a, b) => (a.packageName < b.packageName ? -1 : 1));
      for (const a of apps) matches.push({ pkg: a.packageName, cls: a.launcherActivity!, isDefault: false });
    }
    if (resolveOnly) {
      const m = matches[0];
      if (!m) {
        await print(ctx, 'No activity found\n');
        return 0;
      }
      await print(ctx, brief ? resolveBrief(m.pkg, m.cls, m.isDefault) : `Activity: ${flatten(m.pkg, m.cls)}\n`);
      return 0;
    }
    if (matches.length === 0) {
      await print(ctx, 'No activities found\n');
      return 0;
    }
    if (components) {
      await print(ctx, matches.map((m) => `${flatten(m.pkg, m.cls)}\n`).join(''));
      return 0;
    }
    let out = `${matches.length} activities found:\n`;
    matches.forEach((m, i) => {
      out += `  Activity #${i}:\n`;
      out += brief
        ? resolveBrief(m.pkg, m.cls, m.isDefault)
            .split('\n')
            .filter(Boolean)
            .map((l) => `    ${l}\n`)
            .join('')
        : `    ActivityInfo:\n      name=${m.cls}\n      packageName=${m.pkg}\n`;
    });
    await print(ctx, out);
    return 0;
  };

  const pm: CommandFn = async (ctx) => {
    const [sub, ...rest] = ctx.args;
    const positional = rest.filter((a, i) => !a.startsWith('-') && !['--user', '-i', '--install-reason', '-S', '--abi'].includes(rest[i - 1] ?? ''));
    switch (sub) {
      case 'list':
        return pmList(ctx, rest);
      case 'path': {
        const app = positional[0] ? appOf(positional[0]) : undefined;
        if (!app) return 1;
        await print(ctx, `package:${app.apkPath}\n`);
        return 0;
      }
      case 'install': {
        const path = positional[positional.length - 1];
        if (!path) {
          await complain(ctx, 'Error: APK content must be streamed');
          return 1;
        }
        if (device.options.installMs > 0) await delay(device.options.installMs, undefined, { signal: ctx.signal }).catch(() => undefined);
        const result = device.install(path, { allowDowngrade: rest.includes('-d') });
        if (result.ok) await print(ctx, result.message + '\n');
        else if (result.message.startsWith('Failure')) await print(ctx, result.message + '\n');
        else await complain(ctx, result.message);
        return result.ok ? 0 : 1;
      }
      case 'uninstall': {
        const pkg = positional[0];
        if (!pkg) {
          await complain(ctx, 'Error: package name not specified');
          return 1;
        }
        const ok = device.uninstall(pkg);
        await print(ctx, ok ? 'Success\n' : 'Failure [DELETE_FAILED_INTERNAL_ERROR]\n');
        return ok ? 0 : 1;
      }
      case 'clear': {
        const ok = positional[0] !== undefined && device.clearData(positional[0]);
        await print(ctx, ok ? 'Success\n' : 'Failed\n');
        return ok ? 0 : 1;
      }
      case 'grant':
      case 'revoke':
      case 'enable':
      case 'disable':
      case 'disable-user':
      case 'hide':
      case 'unhide':
      case 'reset-permissions': {
        const pkg = positional[0];
        if (pkg && !pkg.includes('/') && !appOf(pkg) && sub !== 'reset-permissions') {
          await complain(ctx, `Exception occurred while executing '${sub}':\njava.lang.IllegalArgumentException: Unknown package: ${pkg}`);
          return 255;
        }
        return 0;
      }
      case 'query-activities':
        return queryActivities(ctx, rest, false);
      case 'resolve-activity':
        return queryActivities(ctx, rest, true);
      case 'dump':
        return dumpPackage(ctx, positional[0]);
      default:
        await complain(ctx, `Unknown command: ${sub ?? ''}`);
        return 1;
    }
  };
  commands.set('pm', pm);

  const dumpPackage = async (ctx: CommandContext, pkg: string | undefined) => {
    const app = pkg ? appOf(pkg) : undefined;
    if (!app) {
      await print(ctx, `Unable to find package: ${pkg ?? ''}\n`);
      return 0;
    }
    const h = hashCode(app.packageName);
    const codePath = app.apkPath.replace(/\/[^/]+$/, '');
    await print(
      ctx,
      `Packages:\n  Package [${app.packageName}] (${h}):\n    userId=${app.uid}\n    pkg=Package{${h} ${app.packageName}}\n` +
        `    codePath=${codePath}\n    versionCode=${app.versionCode} minSdk=21 targetSdk=${o.sdk}\n    versionName=${app.versionName}\n` +
        `    flags=[ ${app.system ? 'SYSTEM ' : ''}HAS_CODE ALLOW_CLEAR_USER_DATA ALLOW_BACKUP ]\n`,
    );
    return 0;
  };

  // ---- dumpsys ----

  const focusWindow = () => {
    if (device.locked || device.shade) return 'NotificationShade';
    const top = device.foreground;
    if (device.screen === 'recents') return `${LAUNCHER_PACKAGE}/${LAUNCHER_ACTIVITY}`;
    return top ? `${top.packageName}/${top.activity}` : `${LAUNCHER_PACKAGE}/${LAUNCHER_ACTIVITY}`;
  };
  const resumed = () => {
    const top = device.screen === 'app' ? device.tasks[0] : undefined;
    const pkg = top?.packageName ?? LAUNCHER_PACKAGE;
    const cls = top?.activity ?? LAUNCHER_ACTIVITY;
    const task = top ? 10 + device.tasks.length : 2;
    return `ActivityRecord{${hashCode(pkg + cls)} u0 ${flatten(pkg, cls)} t${task}}`;
  };

  const dumpsysSections: Record<string, () => string> = {
    battery: () => {
      const status = !device.plugged ? 3 : device.battery >= 100 ? 5 : 2;
      return (
        'Current Battery Service state:\n' +
        `  AC powered: false\n  USB powered: ${device.plugged}\n  Wireless powered: false\n  Dock powered: false\n` +
        `  Max charging current: ${device.plugged ? 500000 : 0}\n  Max charging voltage: ${device.plugged ? 5000000 : 0}\n` +
        `  Charge counter: ${device.battery * 40000}\n  status: ${status}\n  health: 2\n  present: true\n` +
        `  level: ${device.battery}\n  scale: 100\n  voltage: ${3600 + device.battery * 6}\n  temperature: 250\n  technology: Li-ion\n`
      );
    },
    power: () => {
      const awake = device.awake;
      return (
        'POWER MANAGER (dumpsys power)\n\nPower Manager State:\n' +
        `  mDirty=0x0\n  mWakefulness=${awake ? 'Awake' : 'Asleep'}\n  mWakefulnessChanging=false\n  mIsPowered=${device.plugged}\n` +
        `  mPlugType=${device.plugged ? 2 : 0}\n  mBatteryLevel=${device.battery}\n  mDockState=0\n  mStayOn=false\n  mProximityPositive=false\n` +
        `  mBootCompleted=true\n  mSystemReady=true\n  mHalAutoSuspendModeEnabled=false\n  mHalInteractiveModeEnabled=${awake}\n` +
        `  mWakeLockSummary=0x0\n  mUserActivitySummary=${awake ? '0x1' : '0x0'}\n  mRequestWaitForNegativeProximity=false\n` +
        `  mSandmanScheduled=false\n  mBatteryLevelLow=false\n  mLightDeviceIdleMode=false\n  mDeviceIdleMode=false\n` +
        `  mScreenBrightnessBoostInProgress=false\n  mDisplayReady=true\n  mHoldingWakeLockSuspendBlocker=false\n` +
        `  mHoldingDisplaySuspendBlocker=${awake}\n\nDisplay Power: state=${awake ? 'ON' : 'OFF'}\n`
      );
    },
    window: () => windowDump(),
    activity: () => {
      const lines = ['ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)', 'Display #0 (activities from top to bottom):'];
      device.tasks.forEach((t, i) => {
        const app = appOf(t.packageName);
        lines.push(
          `  * Task{${hashCode(t.packageName)} #${10 + device.tasks.length - i} type=standard A=${app?.uid ?? 1000}:${t.packageName} U=0 visible=${i === 0 && device.screen === 'app'} mode=fullscreen translucent=false sz=1}`,
        );
      });
      lines.push(`  ResumedActivity: ${resumed()}`, `  mResumedActivity: ${resumed()}`, `  topResumedActivity=${resumed()}`, '');
      return lines.join('\n');
    },
    input_method: () => {
      // mInputShown: the keyboard was asked to show; mIsInputViewShown (the IME's own state): it draws a window.
      const shown = device.imeShown;
      return (
        'Current Input Method Manager state:\n' +
        `  mCurMethodId=${device.settings.secure.get('default_input_method') ?? LATIN_IME}\n` +
        `  mInputShown=${shown}\n  mShowRequested=${shown}\n  mSystemReady=true\n  mInteractive=${device.awake}\n` +
        `  InputMethodService state:\n    mWindowVisible=${shown && device.imeHasView} mWindowWasVisible=${shown}\n` +
        `    mIsInputViewShown=${shown && device.imeHasView}\n`
      );
    },
    wifi: () =>
      `Wi-Fi is ${device.wifi ? 'enabled' : 'disabled'}\nVerbose logging is off\nStayAwakeWhilePluggedIn 0\n` +
      `mWifiInfo SSID: ${device.wifi ? '"BenchtopLab"' : '<unknown ssid>'}, BSSID: ${device.wifi ? '02:00:00:00:00:00' : '<none>'}, ` +
      `Supplicant state: ${device.wifi ? 'COMPLETED' : 'DISCONNECTED'}, Link speed: ${device.wifi ? 433 : -1}Mbps, Frequency: ${device.wifi ? 5180 : -1}MHz\n`,
    connectivity: () =>
      'NetworkProvider info:\n' +
      (device.wifi
        ? 'Active default network: 100\n\nCurrent Networks:\n  NetworkAgentInfo{network{100}  handle{432902426637}  ni{WIFI CONNECTED extra: "BenchtopLab"}  Score(Validated)}\n'
        : 'Active default network: none\n\nCurrent Networks:\n'),
    display: () => {
      const { width, height } = device.logicalSize;
      return (
        'DISPLAY MANAGER (dumpsys display)\n  mOnlyCore=false\n  mSafeMode=false\n\nDisplay Devices: size=1\n' +
        `  DisplayDeviceInfo{"Built-in Screen": uniqueId="local:0", ${o.width} x ${o.height}, modeId 1, density ${o.density}, ${o.density}.0 x ${o.density}.0 dpi, state ${device.awake ? 'ON' : 'OFF'}}\n\n` +
        `Logical Displays: size=1\n  Display 0:\n    mDisplayId=0\n    mBaseDisplayInfo=DisplayInfo{"Built-in Screen", displayId 0, real ${width} x ${height}, rotation ${device.rotation}, density ${o.density}}\n`
      );
    },
  };

  /** Packages exempt from Doze, as `dumpsys deviceidle whitelist +PKG` adds them (the system's own come first). */
  const idleWhitelist = new Set<string>();
  const deviceIdleWhitelist = async (ctx: CommandContext, args: string[]): Promise<number> => {
    if (args.length === 0) {
      const system = ['com.android.providers.downloads', 'com.android.shell'];
      await print(ctx, [...system.map((p) => `system-excidle,${p},${appOf(p)?.uid ?? 1000}`), ...[...idleWhitelist].map((p) => `user,${p},${appOf(p)?.uid ?? 0}`)].join('\n') + '\n');
      return 0;
    }
    for (const arg of args) {
      const pkg = arg.slice(1);
      if (arg.startsWith('+')) {
        if (!appOf(pkg)) await print(ctx, `Unknown package: ${pkg}\n`);
        else {
          idleWhitelist.add(pkg);
          await print(ctx, `Added: ${pkg}\n`);
        }
      } else if (arg.startsWith('-')) {
        await print(ctx, idleWhitelist.delete(pkg) ? `Removed: ${pkg}\n` : `Package not in whitelist: ${pkg}\n`);
      } else {
        await print(ctx, `Package must be prefixed with +, -, or =: ${arg}\n`);
        return 255;
      }
    }
    return 0;
  };

  /** `dumpsys activity services [package | component]`: the running services' ServiceRecords. */
  const servicesDump = (spec?: string): string => {
    const wanted = spec && parseComponent(spec);
    const records: string[] = [];
    for (const [key, s] of services) {
      if (s.process.signal.aborted) {
        services.delete(key);
        continue;
      }
      if (wanted ? wanted.pkg !== s.pkg || wanted.cls !== s.cls : spec !== undefined && spec !== s.pkg) continue;
      const app = appOf(s.pkg);
      const short = flatten(s.pkg, s.cls);
      const uid = app?.uid ?? 1000;
      const ago = Math.max(0, Date.now() - s.startedAt);
      records.push(
        `  * ServiceRecord{${hashCode(key)} u0 ${short}}\n` +
          `    intent={cmp=${short}}\n    packageName=${s.pkg}\n    processName=${s.pkg}\n` +
          `    baseDir=${app?.apkPath ?? ''}\n    dataDir=/data/user/0/${s.pkg}\n` +
          `    app=ProcessRecord{${hashCode(s.pkg)} ${s.process.pid}:${s.pkg}/u0a${uid % 10000}}\n` +
          (s.foreground ? `    isForeground=true foregroundId=1 foregroundNoti=Notification(channel=${s.pkg} shortcut=null contentView=null vibrate=null sound=null defaults=0x0 flags=0x62 color=0x00000000 vis=PRIVATE)\n` : '') +
          `    createTime=-${ago}ms startingBgTimeout=--\n    lastActivity=-${ago}ms restartTime=-${ago}ms createdFromFg=true\n` +
          '    startRequested=true delayedStop=false stopIfKilled=false callStart=true lastStartId=1\n',
      );
    }
    return 'ACTIVITY MANAGER SERVICES (dumpsys activity services)\n' + (records.length ? `  User 0 active services:\n${records.join('\n')}` : '  (nothing)\n');
  };

  const windowDump = (section?: string): string => {
    const { width, height } = device.logicalSize;
    const lock = device.locked;
    const focus = focusWindow();
    const policy =
      'WINDOW MANAGER POLICY STATE (dumpsys window policy)\n' +
      '    mSafeMode=false mSystemReady=true mSystemBooted=true\n' +
      `    mUserRotation=ROTATION_${device.rotation * 90} mUserRotationMode=${device.settings.system.get('accelerometer_rotation') === '1' ? 'USER_ROTATION_FREE' : 'USER_ROTATION_LOCKED'}\n` +
      `    mAwake=${device.awake}\n    mScreenOnEarly=${device.awake} mScreenOnFully=${device.awake}\n` +
      `    mKeyguardDrawComplete=true mWindowManagerDrawComplete=true\n` +
      `    mDreamingLockscreen=${lock} mDreamingSleepToken=null\n` +
      `    mShowingLockscreen=${lock} mShowingDream=false isStatusBarKeyguard=${lock}\n` +
      `    KeyguardServiceDelegate\n      showing=${lock}\n      inputRestricted=${lock}\n      occluded=false\n      secure=false\n` +
      `      dreaming=false\n      systemIsReady=true\n      deviceHasKeyguard=true\n      enabled=true\n` +
      `      screenState=${device.awake ? 'SCREEN_STATE_ON' : 'SCREEN_STATE_OFF'}\n      interactiveState=${device.awake ? 'INTERACTIVE_STATE_AWAKE' : 'INTERACTIVE_STATE_SLEEP'}\n` +
      `      KeyguardStateMonitor\n        mIsShowing=${lock}\n        mSimSecure=false\n        mInputRestricted=${lock}\n        mTrusted=false\n        mCurrentUserId=0\n`;
    const displays =
      'WINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)\n' +
      '  Display: mDisplayId=0 rootTasks=1\n' +
      `    init=${o.width}x${o.height} ${o.density}dpi cur=${width}x${height} app=${width}x${height} rng=${Math.min(width, height)}x${Math.min(width, height) - 48}-${Math.max(width, height)}x${Math.max(width, height) - 48}\n` +
      `    mRotation=${device.rotation} mLastOrientation=-1\n` +
      `  mCurrentFocus=Window{${hashCode(focus)} u0 ${focus}}\n` +
      `  mFocusedApp=${resumed()}\n`;
    const windows =
      'WINDOW MANAGER WINDOWS (dumpsys window windows)\n' +
      `  Window #0 Window{${hashCode('StatusBar')} u0 StatusBar}:\n    mOwnerUid=10033 showForAllUsers=true package=com.android.systemui\n` +
      `  Window #1 Window{${hashCode(focus)} u0 ${focus}}:\n    mHasSurface=${device.awake} isReadyForDisplay()=${device.awake}\n` +
      `  mCurrentFocus=Window{${hashCode(focus)} u0 ${focus}}\n  mFocusedApp=${resumed()}\n` +
      `  mInputMethodTarget=${device.screen === 'app' && !lock ? `Window{${hashCode(focus)} u0 ${focus}}` : 'null'}\n`;
    const all: Record<string, string> = { policy, displays, windows };
    if (section && all[section]) return all[section]!;
    return [policy, displays, windows].join('\n');
  };

  commands.set('dumpsys', async (ctx) => {
    const [service, ...rest] = ctx.args;
    if (service === undefined || service === '-l') {
      await print(ctx, `Currently running services:\n${Object.keys(dumpsysSections).map((s) => `  ${s}\n`).join('')}  package\n`);
      return 0;
    }
    if (service === 'battery' && rest[0] === 'set' && rest[1] === 'level' && rest[2] !== undefined) {
      device.battery = Math.max(0, Math.min(100, Number(rest[2]) || 0));
      device.changed();
      return 0;
    }
    if (service === 'battery' && (rest[0] === 'unplug' || rest[0] === 'reset')) {
      device.plugged = rest[0] === 'reset';
      device.changed();
      return 0;
    }
    if (service === 'package') return dumpPackage(ctx, rest.find((a) => !a.startsWith('-')));
    if (service === 'window') {
      await print(ctx, windowDump(rest[0]));
      return 0;
    }
    if (service === 'deviceidle' && rest[0] === 'whitelist') return deviceIdleWhitelist(ctx, rest.slice(1));
    if (service === 'activity' && rest[0] === 'services') {
      await print(ctx, servicesDump(rest[1]));
      return 0;
    }
    const section = dumpsysSections[service];
    if (!section) {
      await complain(ctx, `Can't find service: ${service}`);
      return 0;
    }
    await print(ctx, section());
    return 0;
  });

  // ---- notification listeners, app ops ----

  const notification: CommandFn = async (ctx) => {
    const [sub, component] = ctx.args;
    if ((sub === 'allow_listener' || sub === 'disallow_listener') && component) return 0;
    if (sub === 'allow_listener' || sub === 'disallow_listener') {
      await complain(ctx, `usage: cmd notification ${sub} COMPONENT [user_id (current user if not specified)]`);
      return 1;
    }
    await complain(ctx, `Unknown command: ${sub ?? ''}`);
    return 255;
  };

  const appops: CommandFn = async (ctx) => {
    const args = ctx.args.filter((a, i) => !a.startsWith('--') && ctx.args[i - 1] !== '--user' && ctx.args[i - 1] !== '--uid');
    const [sub, pkg, op, mode] = args;
    if (sub === 'set' && pkg && op && mode) {
      if (!appOf(pkg)) {
        await complain(ctx, `Error: Unknown package: ${pkg}`);
        return 255;
      }
      return 0;
    }
    if (sub === 'get' && pkg) {
      await print(ctx, 'No operations.\n');
      return 0;
    }
    await complain(ctx, 'AppOps service (appops) commands:\n  set [--user <USER_ID>] <PACKAGE | UID> <OP> <MODE>\n  get [--user <USER_ID>] <PACKAGE | UID> [<OP>]');
    return 1;
  };
  commands.set('appops', appops);

  // ---- cmd ----

  /** The clipboard service's shell command: `get text` prints the primary clip's text, `set text TEXT` replaces it. */
  const clipboard: CommandFn = async (ctx) => {
    const [sub, kind, ...text] = ctx.args;
    if (sub === 'get' && kind === 'text') {
      await print(ctx, `${device.clipboard}\n`);
      return 0;
    }
    if (sub === 'set' && kind === 'text') {
      device.clipboard = text.join(' ');
      return 0;
    }
    await complain(ctx, 'Clipboard service commands:\n  get text\n  set text TEXT');
    return 1;
  };

  /** WifiShellCommand: `set-wifi-enabled enabled|disabled` and `status`. */
  const wifi: CommandFn = async (ctx) => {
    const [sub, state] = ctx.args;
    if (sub === 'set-wifi-enabled' && (state === 'enabled' || state === 'disabled')) {
      device.setWifi(state === 'enabled');
      return 0;
    }
    if (sub === 'status') {
      await print(ctx, device.wifi ? 'Wifi is enabled\nWifi is connected to "BenchtopLab"\n' : 'Wifi is disabled\n');
      return 0;
    }
    await complain(ctx, sub === 'set-wifi-enabled' ? "Invalid argument: expected 'enabled' or 'disabled'" : `Unknown command: ${sub ?? ''}`);
    return sub === 'set-wifi-enabled' ? 255 : 1;
  };

  /** StatusBarShellCommand: the shade pulled down and put away. */
  const statusbar: CommandFn = async (ctx) => {
    const [sub] = ctx.args;
    if (sub === 'expand-notifications' || sub === 'expand-settings') device.openShade();
    else if (sub === 'collapse') device.closeShade();
    else {
      await complain(ctx, `Unknown command: ${sub ?? ''}`);
      return 1;
    }
    return 0;
  };

  commands.set('cmd', async (ctx) => {
    // `cmd -w SERVICE`: wait for the service to be published, which every service here already is.
    const [service, ...rest] = ctx.args[0] === '-w' ? ctx.args.slice(1) : ctx.args;
    const delegate: Record<string, CommandFn> = { package: pm, activity: am, input, window: wm, settings, notification, appops, clipboard, wifi, statusbar };
    if (service === '-l') {
      await print(ctx, `Currently running services:\n${Object.keys(delegate).map((s) => `  ${s}\n`).join('')}`);
      return 0;
    }
    const fn = service ? delegate[service] : undefined;
    if (!fn) {
      await complain(ctx, `cmd: Can't find service: ${service ?? ''}`);
      return 20;
    }
    return fn({ ...ctx, args: rest });
  });

  // ---- screen ----

  commands.set('screencap', async (ctx) => {
    const { fs } = ctx;
    let png = false;
    let file: string | undefined;
    for (let i = 0; i < ctx.args.length; i++) {
      const a = ctx.args[i]!;
      if (a === '-p') png = true;
      else if (a === '-d') i++;
      else if (a === '-h') {
        await complain(ctx, 'usage: screencap [-hp] [-d display-id] [FILENAME]\n   -h: this message\n   -p: save the file as a png.');
        return 0;
      } else if (!a.startsWith('-')) file = a;
    }
    if (file?.endsWith('.png')) png = true;
    let data: Buffer;
    if (png) data = screen.png();
    else {
      const c = screen.canvas();
      // Android 9+ follows width, height and pixel format with the dataspace.
      const header = Buffer.alloc(o.sdk >= 28 ? 16 : 12);
      header.writeUInt32LE(c.width, 0);
      header.writeUInt32LE(c.height, 4);
      header.writeUInt32LE(1, 8);
      data = Buffer.concat([header, c.data]);
    }
    if (!file) {
      await print(ctx, data);
      return 0;
    }
    try {
      fs.writeFile(fs.resolve(file, ctx.cwd), data);
    } catch (err) {
      await complain(ctx, `Error opening file: ${file} (${err instanceof FsError ? err.message : String(err)})`);
      return 1;
    }
    return 0;
  });

  commands.set('uiautomator', async (ctx) => {
    const [sub, ...rest] = ctx.args;
    if (sub !== 'dump') {
      await complain(ctx, 'Usage: uiautomator <subcommand> [options]\n\nAvailable subcommands:\n\nhelp: displays help message\n\ndump: creates an XML dump of current UI hierarchy\n');
      return sub === undefined ? 0 : 1;
    }
    const file = rest.find((a) => !a.startsWith('--')) ?? '/sdcard/window_dump.xml';
    const xml = screen.dump();
    if (xml === undefined) {
      await complain(ctx, 'ERROR: null root node returned by UiTestAutomationBridge.');
      return 1;
    }
    if (file === '/dev/tty' || file === '/dev/stdout') {
      await print(ctx, xml);
    } else {
      try {
        ctx.fs.writeFile(ctx.fs.resolve(file, ctx.cwd), Buffer.from(xml, 'utf8'));
      } catch (err) {
        await complain(ctx, `ERROR: could not write ${file}: ${err instanceof FsError ? err.message : String(err)}`);
        return 1;
      }
    }
    // Sic: Android's own spelling, which clients match on.
    await print(ctx, `UI hierchary dumped to: ${file}\n`);
    return 0;
  });

  // ---- ime, svc, logcat, pidof ----

  commands.set('ime', async (ctx) => {
    const [sub, ...rest] = ctx.args;
    const enabled = (device.settings.secure.get('enabled_input_methods') ?? '').split(':').filter(Boolean);
    const available = [ADB_KEYBOARD_IME, LATIN_IME, ...[...device.apps.values()].flatMap((a) => (a.inputMethods ?? []).map((cls) => flatten(a.packageName, cls)))];
    const id = rest.find((a) => !a.startsWith('-'));
    const enable = (ids: string[]) => {
      device.settings.secure.set('enabled_input_methods', ids.join(':'));
      device.changed();
    };
    switch (sub) {
      case 'list': {
        const listed = rest.includes('-a') ? available : enabled.filter((e) => available.includes(e));
        await print(ctx, listed.map((e) => (rest.includes('-s') ? `${e}\n` : `${e}:\n  mId=${e}\n`)).join(''));
        return 0;
      }
      case 'set':
        if (!id || !enabled.includes(id)) {
          await complain(ctx, `Unknown input method ${id ?? ''} cannot be selected for user #0`);
          return 1;
        }
        device.settings.secure.set('default_input_method', id);
        await print(ctx, `Input method ${id} selected for user #0\n`);
        return 0;
      case 'enable':
      case 'disable': {
        if (!id || !available.includes(id)) {
          await complain(ctx, `Unknown input method ${id ?? ''} cannot be ${sub}d for user #0`);
          return 255;
        }
        const on = sub === 'enable';
        const already = enabled.includes(id) === on;
        if (!already) enable(on ? [...enabled, id] : enabled.filter((e) => e !== id));
        await print(ctx, `Input method ${id}: ${already ? 'already' : 'now'} ${sub}d for user #0\n`);
        return 0;
      }
      case 'reset':
        device.settings.secure.set('default_input_method', ADB_KEYBOARD_IME);
        await print(ctx, `Reset current and enabled IMEs for user #0\n  Selected: ${ADB_KEYBOARD_IME}\n`);
        return 0;
      default:
        await complain(ctx, 'ime <command>:\n  list [-a] [-s]\n  enable [--user <USER_ID>] <ID>\n  disable [--user <USER_ID>] <ID>\n  set [--user <USER_ID>] <ID>\n  reset');
        return 1;
    }
  });

  commands.set('svc', async (ctx) => {
    const [what, verb] = ctx.args;
    if (what === 'wifi' && (verb === 'enable' || verb === 'disable')) device.setWifi(verb === 'enable');
    else if (what === 'bluetooth' && (verb === 'enable' || verb === 'disable')) device.setBluetooth(verb === 'enable');
    else if (what !== 'power' && what !== 'data' && what !== 'usb' && what !== 'nfc') {
      await complain(ctx, 'Available commands:\n    help     Show information about the subcommands\n    power    Control the power manager\n    data     Control mobile data connectivity\n    wifi     Control the Wi-Fi manager\n    usb      Control Usb state\n    nfc      Control NFC functions\n    bluetooth Control Bluetooth service');
      return 1;
    }
    return 0;
  });

  commands.set('logcat', (ctx) => logcat(ctx, device.log));

  // `log [-p v|d|i|w|e|f] [-t tag] message...`: toolbox's way to write to the log from the shell.
  commands.set('log', async (ctx) => {
    const args = [...ctx.args];
    let priority = 'I';
    let tag = 'log';
    while (args[0]?.startsWith('-') && args.length > 1) {
      const flag = args.shift()!;
      if (flag === '-p') priority = (args.shift() ?? 'i').toUpperCase();
      else if (flag === '-t') tag = args.shift() ?? tag;
      else return (await ctx.stderr.write(`log: invalid option ${flag}\n`), 1);
    }
    if (!/^[VDIWEF]$/.test(priority)) return (await ctx.stderr.write('log: invalid priority\n'), 1);
    device.log.append(priority as LogPriority, tag, args.join(' '), 2000 + (ctx.args.length % 100));
    return 0;
  });

  commands.set('pidof', async (ctx) => {
    const pids = ctx.args.map((a) => device.pids.get(a)).filter((p): p is number => p !== undefined);
    if (pids.length === 0) return 1;
    await print(ctx, pids.join(' ') + '\n');
    return 0;
  });

  return commands;
}
