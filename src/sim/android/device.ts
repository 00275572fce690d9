import { randomBytes } from 'node:crypto';
import { ApkError, readApkInfo, type ApkInfo, type ApkInstrumentation } from './apk.js';
import type { Rgb } from './canvas.js';
import { LogBuffer } from './logcat.js';
import { MemFs } from './mem-fs.js';

/** The phone's state machine: power and keyguard, apps and tasks, the built-in apps' screens, settings. */

export interface DeviceOptions {
  model: string;
  manufacturer: string;
  brand: string;
  productName: string;
  deviceName: string;
  osVersion: string;
  sdk: number;
  serialNo: string;
  battery: number;
  width: number;
  height: number;
  density: number;
  installMs: number;
  /** ro.product.cpu.abi: which of minicap's builds runs here. */
  abi: 'arm64-v8a' | 'armeabi-v7a' | 'x86' | 'x86_64';
  /** Display refresh rate in Hz: the most frames per second minicap can see. */
  refreshRate: number;
  /** False for a display minicap cannot capture (emulators, some vendor builds): it starts, then exits with an error. */
  minicapCapture: boolean;
  /** System properties beyond those every phone has, set last (a maker's own, such as its marketing name). */
  properties?: Record<string, string>;
}

/** ro.product.cpu.abilist for each primary ABI: 64-bit phones also run their 32-bit sibling's binaries. */
const ABI_LISTS: Record<DeviceOptions['abi'], { all: string; bits32: string; bits64: string }> = {
  'arm64-v8a': { all: 'arm64-v8a,armeabi-v7a,armeabi', bits32: 'armeabi-v7a,armeabi', bits64: 'arm64-v8a' },
  'armeabi-v7a': { all: 'armeabi-v7a,armeabi', bits32: 'armeabi-v7a,armeabi', bits64: '' },
  x86_64: { all: 'x86_64,x86', bits32: 'x86', bits64: 'x86_64' },
  x86: { all: 'x86', bits32: 'x86', bits64: '' },
};

export interface InstalledApp {
  packageName: string;
  label: string;
  /** Fully qualified class names. */
  activities: string[];
  launcherActivity?: string;
  system: boolean;
  apkPath: string;
  versionCode: number;
  versionName: string;
  color: Rgb;
  uid: number;
  /** Fully qualified service classes, from an installed APK's manifest. */
  services?: string[];
  /** Those of its services that are input methods. */
  inputMethods?: string[];
  /** Test runners from an installed APK's manifest, as `pm list instrumentation` lists them. */
  instrumentations?: ApkInstrumentation[];
}

export interface Task {
  packageName: string;
  activity: string;
}

export type SettingsPage = 'main' | 'wifi' | 'bluetooth' | 'display' | 'about' | `appinfo:${string}`;

export const LAUNCHER_PACKAGE = 'com.android.launcher3';
export const SYSTEMUI_PACKAGE = 'com.android.systemui';
export const SETTINGS_PACKAGE = 'com.android.settings';
export const BROWSER_PACKAGE = 'com.android.chrome';
export const NOTES_PACKAGE = 'com.example.notes';
/** Its stopwatch runs while it is in front: a screen that changes on every refresh, as a game or a video does. */
export const CLOCK_PACKAGE = 'com.android.deskclock';
export const CLOCK_ACTIVITY = 'com.android.deskclock.DeskClock';
export const ADB_KEYBOARD_IME = 'com.android.adbkeyboard/.AdbIME';
export const LATIN_IME = 'com.android.inputmethod.latin/.LatinIME';

export const KEYCODES: Record<string, number> = {
  SOFT_LEFT: 1,
  SOFT_RIGHT: 2,
  HOME: 3,
  BACK: 4,
  CALL: 5,
  ENDCALL: 6,
  ...Object.fromEntries(Array.from({ length: 10 }, (_, i) => [String(i), 7 + i])),
  STAR: 17,
  POUND: 18,
  DPAD_UP: 19,
  DPAD_DOWN: 20,
  DPAD_LEFT: 21,
  DPAD_RIGHT: 22,
  DPAD_CENTER: 23,
  VOLUME_UP: 24,
  VOLUME_DOWN: 25,
  POWER: 26,
  CAMERA: 27,
  CLEAR: 28,
  ...Object.fromEntries(Array.from({ length: 26 }, (_, i) => [String.fromCharCode(65 + i), 29 + i])),
  COMMA: 55,
  PERIOD: 56,
  TAB: 61,
  SPACE: 62,
  ENTER: 66,
  DEL: 67,
  MINUS: 69,
  EQUALS: 70,
  SLASH: 76,
  AT: 77,
  MENU: 82,
  NOTIFICATION: 83,
  SEARCH: 84,
  MEDIA_PLAY_PAUSE: 85,
  PAGE_UP: 92,
  PAGE_DOWN: 93,
  ESCAPE: 111,
  FORWARD_DEL: 112,
  CTRL_LEFT: 113,
  CTRL_RIGHT: 114,
  MOVE_HOME: 122,
  MOVE_END: 123,
  VOLUME_MUTE: 164,
  APP_SWITCH: 187,
  SLEEP: 223,
  WAKEUP: 224,
  CUT: 277,
  COPY: 278,
  PASTE: 279,
};

const CHAR_FOR_KEY: Record<number, string> = {
  ...Object.fromEntries(Array.from({ length: 10 }, (_, i) => [7 + i, String(i)])),
  ...Object.fromEntries(Array.from({ length: 26 }, (_, i) => [29 + i, String.fromCharCode(97 + i)])),
  17: '*',
  18: '#',
  55: ',',
  56: '.',
  62: ' ',
  69: '-',
  70: '=',
  76: '/',
  77: '@',
};

/** Accepts `KEYCODE_HOME`, `HOME` or `3`, as `input keyevent` does. */
export function parseKeycode(arg: string): number | undefined {
  if (/^\d+$/.test(arg)) return Number(arg);
  const name = arg.toUpperCase().replace(/^KEYCODE_/, '');
  return KEYCODES[name];
}

function colorFor(name: string): Rgb {
  let h = 0;
  for (const ch of name) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  const palette: Rgb[] = [
    [0xe5, 0x39, 0x35],
    [0x8e, 0x24, 0xaa],
    [0x39, 0x49, 0xab],
    [0x03, 0x9b, 0xe5],
    [0x00, 0x89, 0x7b],
    [0x7c, 0xb3, 0x42],
    [0xf4, 0x51, 0x1e],
    [0x6d, 0x4c, 0x41],
  ];
  return palette[h % palette.length]!;
}

export interface InstallResult {
  ok: boolean;
  /** The line `pm install` prints. */
  message: string;
  packageName?: string;
}

export class Device {
  readonly fs = new MemFs();
  readonly props = new Map<string, string>();
  readonly settings = {
    system: new Map<string, string>(),
    secure: new Map<string, string>(),
    global: new Map<string, string>(),
  };
  readonly apps = new Map<string, InstalledApp>();
  /** logcat's main buffer: what the system logs as the phone is used. */
  readonly log = new LogBuffer();

  awake = false;
  locked = true;
  screen: 'home' | 'recents' | 'app' = 'home';
  /** Most recent first; when `screen` is 'app' the first task is in front. */
  tasks: Task[] = [];
  /** The launcher's long-press menu, open over this app's icon. */
  popup?: { packageName: string; x: number; y: number };
  lastTap?: { x: number; y: number };
  lastLongPress?: { x: number; y: number };
  lastSwipe?: { x1: number; y1: number; x2: number; y2: number; durationMs: number };
  battery: number;
  /** On USB power, as a phone on a lab's cable is. */
  plugged = true;
  volume = 7;
  wifi = true;
  bluetooth = false;
  settingsPage: SettingsPage = 'main';
  /** How many rows of the Settings list are scrolled above its top. */
  settingsScroll = 0;
  browser = { url: 'about:blank', history: [] as string[], urlFocused: false, draft: '', replaceDraft: false };
  notes = { text: '', focused: false, selected: false };
  /** What the phone's clipboard holds: Copy and Cut in a text field put its selection there. */
  clipboard = '';
  /** The notification shade is pulled down over whatever was showing. */
  shade = false;
  /**
   * The input method asked to show its window: a tap into a text field does (showSoftInput), focus given by the app
   * at launch or by accessibility's ACTION_SET_TEXT does not. Leaving the field, Back and Escape hide it.
   */
  private keyboardRequested = false;
  readonly pids = new Map<string, number>();
  /** Told of every force-stop (also by reinstall and uninstall), so what runs in the package's process can end. */
  readonly stopListeners = new Set<(packageName: string) => void>();

  private revision = 0;
  private nextUid = 10100;
  private nextPid = 3000;

  constructor(readonly options: DeviceOptions) {
    this.battery = options.battery;
    const { model, manufacturer, brand, productName, deviceName, osVersion, sdk, serialNo, density } = options;
    const buildId = `BT${sdk}A.${String(sdk).padStart(2, '0')}0101.001`;
    const props: Record<string, string> = {
      'dalvik.vm.heapsize': '512m',
      'dev.bootcomplete': '1',
      'gsm.sim.state': 'ABSENT',
      'init.svc.adbd': 'running',
      'init.svc.bootanim': 'stopped',
      'net.bt.name': 'Android',
      'persist.sys.locale': 'en-US',
      'persist.sys.timezone': 'UTC',
      'persist.sys.usb.config': 'adb',
      'ro.adb.secure': '1',
      'ro.board.platform': 'sim',
      'ro.boot.serialno': serialNo,
      'ro.bootloader': 'unknown',
      'ro.build.characteristics': 'default',
      'ro.build.date.utc': '1700000000',
      'ro.build.description': `${productName}-user ${osVersion} ${buildId} 1 release-keys`,
      'ro.build.display.id': buildId,
      'ro.build.fingerprint': `${brand}/${productName}/${deviceName}:${osVersion}/${buildId}/1:user/release-keys`,
      'ro.build.id': buildId,
      'ro.build.tags': 'release-keys',
      'ro.build.type': 'user',
      'ro.build.user': 'android-build',
      'ro.build.version.codename': 'REL',
      'ro.build.version.incremental': '1',
      'ro.build.version.release': osVersion,
      'ro.build.version.release_or_codename': osVersion,
      'ro.build.version.sdk': String(sdk),
      'ro.build.version.security_patch': '2025-01-05',
      'ro.debuggable': '0',
      'ro.hardware': 'sim',
      'ro.opengles.version': '196610',
      'ro.product.board': deviceName,
      'ro.product.brand': brand,
      'ro.product.cpu.abi': options.abi,
      'ro.product.cpu.abilist': ABI_LISTS[options.abi].all,
      'ro.product.cpu.abilist32': ABI_LISTS[options.abi].bits32,
      'ro.product.cpu.abilist64': ABI_LISTS[options.abi].bits64,
      'ro.product.device': deviceName,
      'ro.product.locale': 'en-US',
      'ro.product.manufacturer': manufacturer,
      'ro.product.model': model,
      'ro.product.name': productName,
      'ro.revision': '0',
      'ro.secure': '1',
      'ro.serialno': serialNo,
      'ro.sf.lcd_density': String(density),
      'service.bootanim.exit': '1',
      'sys.boot_completed': '1',
      'sys.usb.state': 'adb',
    };
    for (const [k, v] of Object.entries({ ...props, ...options.properties })) this.props.set(k, v);
    this.settings.system.set('accelerometer_rotation', '0');
    this.settings.system.set('user_rotation', '0');
    this.settings.system.set('screen_brightness', '128');
    this.settings.system.set('screen_off_timeout', '60000');
    this.settings.secure.set('default_input_method', ADB_KEYBOARD_IME);
    this.settings.secure.set('enabled_input_methods', `${ADB_KEYBOARD_IME}:${LATIN_IME}`);
    this.settings.secure.set('android_id', randomBytes(8).toString('hex'));
    this.settings.global.set('adb_enabled', '1');
    this.settings.global.set('airplane_mode_on', '0');
    this.settings.global.set('device_name', model);
    this.settings.global.set('wifi_on', '1');
    this.settings.global.set('bluetooth_on', '0');

    const system = (packageName: string, label: string, apk: string, launcher?: string, color?: Rgb) => {
      this.apps.set(packageName, {
        packageName,
        label,
        activities: launcher ? [launcher] : [],
        launcherActivity: launcher,
        system: true,
        apkPath: apk,
        versionCode: sdk * 1000,
        versionName: osVersion,
        color: color ?? colorFor(packageName),
        uid: 1000,
      });
    };
    system('android', 'Android System', '/system/framework/framework-res.apk');
    system(SYSTEMUI_PACKAGE, 'System UI', '/system/priv-app/SystemUI/SystemUI.apk');
    system(LAUNCHER_PACKAGE, 'Launcher', '/system/priv-app/Launcher3/Launcher3.apk');
    system('com.android.shell', 'Shell', '/system/priv-app/Shell/Shell.apk');
    system('com.android.providers.settings', 'Settings Storage', '/system/priv-app/SettingsProvider/SettingsProvider.apk');
    system('com.android.inputmethod.latin', 'Android Keyboard (AOSP)', '/system/app/LatinIME/LatinIME.apk');
    system('com.android.adbkeyboard', 'ADB Keyboard', '/system/app/ADBKeyboard/ADBKeyboard.apk');
    system(SETTINGS_PACKAGE, 'Settings', '/system/priv-app/Settings/Settings.apk', 'com.android.settings.Settings', [0x54, 0x6e, 0x7a]);
    system(BROWSER_PACKAGE, 'Chrome', '/system/app/Chrome/Chrome.apk', 'com.google.android.apps.chrome.Main', [0x1e, 0x88, 0xe5]);
    system(NOTES_PACKAGE, 'Notes', '/system/app/Notes/Notes.apk', 'com.example.notes.MainActivity', [0xf9, 0xa8, 0x25]);
    // Started by component (am start -n), not from the launcher, so the home screen's layout stays as it was.
    system(CLOCK_PACKAGE, 'Clock', '/system/app/DeskClock/DeskClock.apk', undefined, [0x42, 0x85, 0xf4]);
    this.apps.get(CLOCK_PACKAGE)!.activities.push(CLOCK_ACTIVITY);
  }

  /** When the Clock's stopwatch started, while the Clock runs. */
  stopwatchStartedAt: number | undefined;

  /** The picture changes on every display refresh: the Clock's stopwatch is on screen. */
  get animating(): boolean {
    return this.interactive && this.foreground?.packageName === CLOCK_PACKAGE;
  }

  /** Changes whenever anything visible changes; screen captures are cached against it. */
  get rev(): number {
    return this.revision;
  }

  changed(): void {
    this.revision++;
    for (const wake of [...this.changeWaiters]) wake();
  }

  private readonly changeWaiters = new Set<() => void>();

  /**
   * Resolves at the next change of anything visible, after `ms`, or when `signal` aborts, whichever comes first: what
   * a capture loop waits on while the screen stands still, rather than looking at it on every display refresh (which
   * cost a watched phone about 2 % of a core doing nothing).
   */
  untilChanged(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.changeWaiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      this.changeWaiters.add(done);
      if (signal?.aborted) done();
      else signal?.addEventListener('abort', done, { once: true });
    });
  }

  get rotation(): 0 | 1 | 2 | 3 {
    if (this.settings.system.get('accelerometer_rotation') === '1') return 0;
    return ((Number(this.settings.system.get('user_rotation')) || 0) & 3) as 0 | 1 | 2 | 3;
  }

  /** The display size in the current orientation (what screencap and input coordinates use). */
  get logicalSize(): { width: number; height: number } {
    const { width, height } = this.options;
    return this.rotation % 2 === 1 ? { width: height, height: width } : { width, height };
  }

  get foreground(): Task | undefined {
    return this.screen === 'app' ? this.tasks[0] : undefined;
  }

  /** What the keyguard, the shade, the launcher or an app shows: the package uiautomator reports for the window. */
  get windowPackage(): string {
    if (this.locked || this.shade) return SYSTEMUI_PACKAGE;
    return this.foreground?.packageName ?? LAUNCHER_PACKAGE;
  }

  get interactive(): boolean {
    return this.awake && !this.locked;
  }

  launcherApps(): InstalledApp[] {
    return [...this.apps.values()]
      .filter((a) => a.launcherActivity)
      .sort((a, b) => a.label.localeCompare(b.label, 'en', { sensitivity: 'base' }));
  }

  // ---- power and keyguard -------------------------------------------------------------------------------

  wake(): void {
    if (this.awake) return;
    this.log.append('I', 'PowerManagerService', 'Waking up from Asleep (uid=2000 reason=WAKE_REASON_APPLICATION details=shell)...');
    this.awake = true;
    this.changed();
  }

  sleep(): void {
    if (!this.awake) return;
    this.log.append('I', 'PowerManagerService', 'Going to sleep due to power_button (uid 1000)...');
    this.awake = false;
    // No lock timeout: the keyguard engages the moment the screen goes off.
    this.locked = true;
    this.popup = undefined;
    this.shade = false;
    this.keyboardRequested = false;
    this.changed();
  }

  /** There is no PIN, so dismissing the keyguard always succeeds while the screen is on. */
  unlock(): void {
    if (!this.awake || !this.locked) return;
    this.locked = false;
    this.changed();
  }

  // ---- navigation -----------------------------------------------------------------------------------------

  goHome(): void {
    if (!this.interactive) return;
    this.showHome();
  }

  /** What an explicit HOME intent does: the launcher comes forward even behind the keyguard. */
  showHome(): void {
    this.screen = 'home';
    this.popup = undefined;
    this.shade = false;
    this.keyboardRequested = false;
    this.changed();
  }

  // ---- the notification shade and the soft keyboard ---------------------------------------------------------

  /** UiDevice.openNotification and `cmd statusbar expand-notifications`: the shade comes down over the screen. */
  openShade(): boolean {
    if (!this.awake) return false;
    if (!this.shade) this.log.append('I', 'StatusBar', 'Expanding the notification shade (expand-notifications)');
    this.shade = true;
    this.changed();
    return true;
  }

  closeShade(): void {
    if (!this.shade) return;
    this.log.append('I', 'StatusBar', 'Collapsing the notification shade');
    this.shade = false;
    this.changed();
  }

  /** The soft keyboard's window is up: asked for, over a focused field of the app in front. */
  get imeShown(): boolean {
    return this.keyboardRequested && !this.shade && this.focusedField() !== undefined;
  }

  /** Whether the current input method draws a window (ADB Keyboard its one-line bar, the AOSP keyboard its keys). */
  get imeHasView(): boolean {
    const ime = this.settings.secure.get('default_input_method');
    return ime === ADB_KEYBOARD_IME || ime === LATIN_IME;
  }

  private showKeyboard(): void {
    if (!this.keyboardRequested) this.log.append('D', 'InputMethodManager', `showSoftInput: ${this.settings.secure.get('default_input_method') ?? LATIN_IME}`);
    this.keyboardRequested = true;
  }

  /** InputMethodService.handleBack: a shown keyboard takes Back (and Escape) for itself and hides. */
  private hideKeyboard(): boolean {
    if (!this.imeShown) return false;
    this.log.append('D', 'InputMethodManager', 'hideSoftInput: the input method window is hidden');
    this.keyboardRequested = false;
    this.changed();
    return true;
  }

  showRecents(): void {
    if (!this.interactive) return;
    this.shade = false;
    this.keyboardRequested = false;
    if (this.screen === 'recents') {
      if (this.tasks.length > 0) this.screen = 'app';
    } else {
      this.screen = 'recents';
    }
    this.popup = undefined;
    this.changed();
  }

  back(): void {
    if (!this.interactive) return;
    if (this.hideKeyboard()) return;
    if (this.shade) {
      this.closeShade();
      return;
    }
    if (this.popup) {
      this.popup = undefined;
    } else if (this.screen === 'recents') {
      this.screen = this.tasks.length > 0 ? 'app' : 'home';
    } else if (this.screen === 'app') {
      const top = this.tasks[0]!.packageName;
      if (top === SETTINGS_PACKAGE && this.settingsPage !== 'main') {
        this.settingsPage = 'main';
      } else if (top === BROWSER_PACKAGE && this.browser.urlFocused) {
        this.browser.urlFocused = false;
      } else if (top === BROWSER_PACKAGE && this.browser.history.length > 0) {
        this.browser.url = this.browser.history.pop()!;
      } else {
        this.screen = 'home';
      }
    }
    this.changed();
  }

  /** Starts (or brings forward) an activity. Activities start behind the keyguard, as on a locked phone. */
  launch(packageName: string, activity?: string): 'started' | 'brought-to-front' | 'not-found' {
    const app = this.apps.get(packageName);
    const cls = activity ?? app?.launcherActivity;
    if (!app || !cls || !app.activities.includes(cls)) return 'not-found';
    const already = this.screen === 'app' && this.tasks[0]?.packageName === packageName && this.tasks[0].activity === cls;
    this.tasks = [{ packageName, activity: cls }, ...this.tasks.filter((t) => t.packageName !== packageName)];
    const component = `${packageName}/${cls.startsWith(`${packageName}.`) ? cls.slice(packageName.length) : cls}`;
    this.log.append('I', 'ActivityTaskManager', `START u0 {act=android.intent.action.MAIN cat=[android.intent.category.LAUNCHER] flg=0x10200000 cmp=${component}} from uid 2000`);
    if (!this.pids.has(packageName)) {
      const pid = this.nextPid++;
      this.pids.set(packageName, pid);
      this.log.append('I', 'ActivityManager', `Start proc ${pid}:${packageName}/u0a${app.uid % 10000} for pre-top-activity {${component}}`);
      this.log.append('I', 'ActivityThread', `Init compatibility callbacks for ${packageName}`, pid, pid);
    }
    if (!already) this.log.append('I', 'ActivityTaskManager', `Displayed ${component}: +${180 + (this.revision % 200)}ms`);
    this.screen = 'app';
    this.popup = undefined;
    this.shade = false;
    if (!already) this.keyboardRequested = false;
    if (packageName === NOTES_PACKAGE) this.notes.focused = true;
    if (packageName === CLOCK_PACKAGE) this.stopwatchStartedAt ??= Date.now();
    this.changed();
    return already ? 'brought-to-front' : 'started';
  }

  openSettingsPage(page: SettingsPage): void {
    this.launch(SETTINGS_PACKAGE);
    this.settingsPage = page;
    this.changed();
  }

  openUrl(url: string): void {
    this.launch(BROWSER_PACKAGE);
    if (this.browser.url !== url) {
      this.browser.history.push(this.browser.url);
      this.browser.url = url;
    }
    this.browser.urlFocused = false;
    this.changed();
  }

  forceStop(packageName: string): void {
    for (const listener of this.stopListeners) listener(packageName);
    const running = this.tasks.some((t) => t.packageName === packageName) || this.pids.has(packageName);
    if (!running) return;
    const wasFront = this.foreground?.packageName === packageName;
    this.log.append('I', 'ActivityManager', `Force stopping ${packageName} appid=${this.apps.get(packageName)?.uid ?? 0} user=0: from pid 4242`);
    const pid = this.pids.get(packageName);
    if (pid !== undefined) this.log.append('I', 'ActivityManager', `Killing ${pid}:${packageName}/u0a${(this.apps.get(packageName)?.uid ?? 0) % 10000} (adj 0): stop ${packageName} due to from pid 4242`);
    this.tasks = this.tasks.filter((t) => t.packageName !== packageName);
    this.pids.delete(packageName);
    if (wasFront || (this.screen === 'app' && this.tasks.length === 0)) this.screen = 'home';
    this.resetAppUi(packageName);
    this.changed();
  }

  private resetAppUi(packageName: string): void {
    if (packageName === SETTINGS_PACKAGE) {
      this.settingsPage = 'main';
      this.settingsScroll = 0;
    }
    if (packageName === BROWSER_PACKAGE) this.browser = { ...this.browser, history: [], urlFocused: false, draft: '' };
    if (packageName === NOTES_PACKAGE) this.notes.focused = false;
    if (packageName === CLOCK_PACKAGE) this.stopwatchStartedAt = undefined;
  }

  clearData(packageName: string): boolean {
    if (!this.apps.has(packageName)) return false;
    this.forceStop(packageName);
    if (packageName === NOTES_PACKAGE) this.notes = { ...this.notes, text: '', selected: false };
    if (packageName === BROWSER_PACKAGE) this.browser = { url: 'about:blank', history: [], urlFocused: false, draft: '', replaceDraft: false };
    this.changed();
    return true;
  }

  // ---- touch and keys -------------------------------------------------------------------------------------

  keyevent(code: number): void {
    const name = Object.entries(KEYCODES).find(([, c]) => c === code)?.[0] ?? String(code);
    this.log.append('D', 'InputDispatcher', `Delivering key KEYCODE_${name} (action=DOWN/UP) to ${this.windowPackage}`);
    switch (code) {
      case 224:
        return this.wake();
      case 223:
        return this.sleep();
      case 26:
        return this.awake ? this.sleep() : this.wake();
      case 82:
        if (this.awake && this.locked) this.unlock();
        return;
      case 3:
        return this.goHome();
      case 4:
        return this.back();
      case 187:
        return this.showRecents();
      case 24:
      case 25:
        this.volume = Math.max(0, Math.min(15, this.volume + (code === 24 ? 1 : -1)));
        return this.changed();
      case 164:
        this.volume = 0;
        return this.changed();
      case 111:
        this.hideKeyboard();
        return;
      case 66:
        return this.enter();
      case 67:
        return this.deleteBackward();
      case 277:
        return this.copySelection(true);
      case 278:
        return this.copySelection(false);
      case 279:
        this.typeText(this.clipboard);
        return;
    }
    const ch = CHAR_FOR_KEY[code];
    if (ch !== undefined) this.typeText(ch);
  }

  private focusedField(): 'notes' | 'url' | undefined {
    const top = this.interactive ? this.foreground?.packageName : undefined;
    if (top === NOTES_PACKAGE && this.notes.focused) return 'notes';
    if (top === BROWSER_PACKAGE && this.browser.urlFocused) return 'url';
    return undefined;
  }

  /** Types into the focused field, if there is one; returns whether anything took the text. */
  typeText(text: string): boolean {
    const field = this.focusedField();
    if (!field || text === '') return false;
    if (field === 'notes') {
      this.notes.text = this.notes.selected ? text : this.notes.text + text;
      this.notes.selected = false;
    } else {
      this.browser.draft = this.browser.replaceDraft ? text : this.browser.draft + text;
      this.browser.replaceDraft = false;
    }
    this.changed();
    return true;
  }

  clearFocusedText(): void {
    const field = this.focusedField();
    if (field === 'notes') this.notes.text = '';
    if (field === 'url') this.browser.draft = '';
    if (field) this.changed();
  }

  private deleteBackward(): void {
    const field = this.focusedField();
    if (field === 'notes') {
      this.notes.text = this.notes.selected ? '' : [...this.notes.text].slice(0, -1).join('');
      this.notes.selected = false;
    }
    if (field === 'url') {
      this.browser.draft = this.browser.replaceDraft ? '' : [...this.browser.draft].slice(0, -1).join('');
      this.browser.replaceDraft = false;
    }
    if (field) this.changed();
  }

  private enter(): void {
    const field = this.focusedField();
    if (field === 'notes') {
      this.notes.text += '\n';
      this.changed();
    } else if (field === 'url') {
      const typed = this.browser.draft.trim();
      this.browser.urlFocused = false;
      if (typed) this.openUrl(normalizeUrl(typed));
      this.changed();
    }
  }

  /** Ctrl+A in a text field: the whole text is selected, and what is typed next replaces it. */
  selectAll(): void {
    const field = this.focusedField();
    if (field === 'notes') this.notes.selected = true;
    if (field === 'url') this.browser.replaceDraft = true;
    if (field) this.changed();
  }

  /** Copy (or Cut) puts the field's selection on the clipboard; with nothing selected, nothing happens. */
  private copySelection(cut: boolean): void {
    const field = this.focusedField();
    if (field === 'notes' && this.notes.selected) {
      this.clipboard = this.notes.text;
      if (cut) this.notes = { ...this.notes, text: '', selected: false };
    } else if (field === 'url' && this.browser.replaceDraft) {
      this.clipboard = this.browser.draft;
      if (cut) this.browser = { ...this.browser, draft: '', replaceDraft: false };
    } else return;
    this.changed();
  }

  focusNotes(): void {
    this.notes.focused = true;
    this.showKeyboard();
    this.changed();
  }

  /** ACTION_SET_TEXT on the Notes field, as UiAutomator's setText performs it: the whole text replaced. */
  setNotesText(text: string): void {
    this.notes = { ...this.notes, text, focused: true, selected: false };
    this.changed();
  }

  /** ACTION_SET_TEXT on Chrome's address bar: it takes focus and holds exactly that text. */
  setUrlDraft(text: string): void {
    this.browser = { ...this.browser, urlFocused: true, draft: text, replaceDraft: false };
    this.changed();
  }

  focusUrlBar(): void {
    this.browser.urlFocused = true;
    this.browser.draft = this.browser.url;
    // Chrome selects the whole address on focus, so typing replaces it.
    this.browser.replaceDraft = true;
    this.showKeyboard();
    this.changed();
  }

  setWifi(on: boolean): void {
    if (this.wifi !== on) {
      this.log.append('I', 'WifiService', `setWifiEnabled package=com.android.shell uid=2000 enable=${on}`);
      this.log.append('I', 'WifiClientModeImpl', on ? 'Connected to "BenchtopLab"' : 'Disconnected from "BenchtopLab": Wi-Fi turned off');
    }
    this.wifi = on;
    this.settings.global.set('wifi_on', on ? '1' : '0');
    this.changed();
  }

  setBluetooth(on: boolean): void {
    this.bluetooth = on;
    this.settings.global.set('bluetooth_on', on ? '1' : '0');
    this.changed();
  }

  // ---- packages -------------------------------------------------------------------------------------------

  install(path: string, options: { allowDowngrade?: boolean } = {}): InstallResult {
    let bytes: Buffer;
    try {
      bytes = this.fs.readFile(path);
    } catch {
      return {
        ok: false,
        message: `Error: Unable to open file: ${path}\nConsider using a file under /data/local/tmp/\nError: Can't open file: ${path}\n\nException occurred while executing 'install':\njava.lang.IllegalArgumentException: Error: Can't open file: ${path}`,
      };
    }
    const session = `vmdl${Math.floor(Math.random() * 1e9)}.tmp`;
    let info;
    try {
      info = readApkInfo(bytes);
    } catch (err) {
      const why = err instanceof ApkError ? err.message : 'not an APK';
      return { ok: false, message: `Failure [INSTALL_PARSE_FAILED_NOT_APK: Failed to parse /data/app/${session}/base.apk: ${why}]` };
    }
    return this.installParsed(bytes, info, options);
  }

  /** What `pm install` does once the APK's manifest is read: also for APKs read once per process (SimulatedPhone's uiautomator2ServerInstalled). */
  installParsed(bytes: Buffer, info: ApkInfo, options: { allowDowngrade?: boolean } = {}): InstallResult {
    const existing = this.apps.get(info.packageName);
    if (existing?.system) {
      return {
        ok: false,
        message: `Failure [INSTALL_FAILED_UPDATE_INCOMPATIBLE: Package ${info.packageName} signatures do not match previously installed version; ignoring!]`,
      };
    }
    if (existing && existing.versionCode > info.versionCode && !options.allowDowngrade) {
      return { ok: false, message: 'Failure [INSTALL_FAILED_VERSION_DOWNGRADE]' };
    }
    if (existing) {
      this.forceStop(info.packageName);
      this.fs.remove(existing.apkPath, { system: true });
    }
    const token = () => randomBytes(16).toString('base64url');
    const apkPath = `/data/app/~~${token()}==/${info.packageName}-${token()}==/base.apk`;
    this.fs.writeSystemFile(apkPath, bytes);
    const launcher = info.activities.find((a) => a.launcher)?.name;
    this.apps.set(info.packageName, {
      packageName: info.packageName,
      label: info.label ?? humanize(info.packageName),
      activities: info.activities.map((a) => a.name),
      launcherActivity: launcher,
      system: false,
      apkPath,
      versionCode: info.versionCode,
      versionName: info.versionName,
      color: colorFor(info.packageName),
      uid: existing?.uid ?? this.nextUid++,
      services: info.services,
      inputMethods: info.inputMethods,
      instrumentations: info.instrumentations,
    });
    this.changed();
    this.log.append('I', 'PackageManager', `Package ${info.packageName} ${existing ? 'replaced' : 'installed'}: versionCode=${info.versionCode} path=${apkPath}`);
    return { ok: true, message: 'Success', packageName: info.packageName };
  }

  uninstall(packageName: string): boolean {
    const app = this.apps.get(packageName);
    if (!app || app.system) return false;
    this.forceStop(packageName);
    this.fs.remove(app.apkPath, { system: true });
    this.apps.delete(packageName);
    this.log.append('I', 'PackageManager', `Package ${packageName} removed by uid 2000`);
    if (this.popup?.packageName === packageName) this.popup = undefined;
    if (this.settingsPage === `appinfo:${packageName}`) this.settingsPage = 'main';
    this.changed();
    return true;
  }
}

export function normalizeUrl(typed: string): string {
  if (/^[a-z][a-z0-9+.-]*:/i.test(typed)) return typed;
  if (/^[^\s]+\.[^\s]+$/.test(typed)) return `https://${typed}`;
  return `https://www.google.com/search?q=${encodeURIComponent(typed)}`;
}

/** io.appium.android.apis -> "Apis": what a launcher would show if the label cannot be read. */
function humanize(packageName: string): string {
  const last = packageName.split('.').pop() ?? packageName;
  return last.charAt(0).toUpperCase() + last.slice(1);
}
