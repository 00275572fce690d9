import { encodePng } from '../png.js';
import { Canvas, ellipsize, textWidth, type Rgb } from '../android/canvas.js';
import { encodeJpeg } from '../android/jpeg.js';
import type { InstalledApp } from './installation-proxy.js';

export const SETTINGS = 'com.apple.Preferences';
export const SAFARI = 'com.apple.mobilesafari';
export const NOTES = 'com.apple.mobilenotes';
export const CLOCK = 'com.apple.mobiletimer';
export const SYSTEM_APPS: InstalledApp[] = [
  // Their executables (and /Applications/<executable>.app) are named as on iOS, not after what the home screen shows.
  { bundleId: SETTINGS, name: 'Settings', executable: 'Preferences', version: '1.0', build: '1', type: 'System' },
  { bundleId: SAFARI, name: 'Safari', executable: 'MobileSafari', version: '17.0', build: '1', type: 'System' },
  { bundleId: NOTES, name: 'Notes', executable: 'MobileNotes', version: '4.11', build: '1', type: 'System' },
  { bundleId: CLOCK, name: 'Clock', executable: 'MobileTimer', version: '1.0', build: '1', type: 'System' },
];

/** XCUIApplicationState, as WDA's /wda/apps/state answers it. */
export const APP_STATE = { NOT_RUNNING: 1, RUNNING_BACKGROUND: 3, RUNNING_FOREGROUND: 4 } as const;

/** One element of the accessibility tree WDA reads (points, not pixels). */
export interface AxNode {
  type: string;
  name?: string;
  label?: string;
  value?: string;
  /** What an empty text input shows greyed out. */
  placeholder?: string;
  /** Absent means enabled, not selected, without keyboard focus. */
  enabled?: boolean;
  selected?: boolean;
  focused?: boolean;
  x: number;
  y: number;
  width: number;
  height: number;
  children: AxNode[];
  onTap?: () => void;
  onLongPress?: () => void;
  /** A scroll view: a finger's travel (points, up and left positive) moves its content; answers whether it moved. */
  onScroll?: (dx: number, dy: number) => boolean;
}

export type Orientation = 'PORTRAIT' | 'LANDSCAPE';

const STATUS_BAR = 20;
const NAV_BAR = 44;
const KEYBOARD = 216;
const ICON = 60;
/** Below this travel (points) a gesture is a touch in place. */
const TOUCH_SLOP = 10;
export const LONG_PRESS_MS = 500;

const WALLPAPER: Rgb = [38, 64, 128];
const WHITE: Rgb = [255, 255, 255];
const BLACK: Rgb = [0, 0, 0];
const GROUPED: Rgb = [242, 242, 247];
const SEPARATOR: Rgb = [198, 198, 200];
const BLUE: Rgb = [0, 122, 255];
const GRAY: Rgb = [142, 142, 147];
const ICON_COLORS: Record<string, Rgb> = { [SETTINGS]: GRAY, [SAFARI]: BLUE, [NOTES]: [255, 204, 0], [CLOCK]: BLACK };

function colorOf(bundleId: string): Rgb {
  if (ICON_COLORS[bundleId]) return ICON_COLORS[bundleId];
  let h = 0;
  for (const ch of bundleId) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return [60 + (h % 160), 60 + ((h >> 8) % 160), 60 + ((h >> 16) % 160)];
}

const node = (type: string, x: number, y: number, width: number, height: number, more: Partial<AxNode> = {}): AxNode => ({
  type, x, y, width, height, children: [], ...more,
});

/**
 * SpringBoard and four apps (Settings, Safari, Notes, and the Clock with its stopwatch running) plus whatever was
 * installed: the state a gesture, a key or a WDA command changes, the accessibility tree WDA's /source serializes, and
 * the picture /screenshot returns.
 */
export class Springboard {
  /** Points of the portrait screen; pixels are `scale` times as many. */
  readonly size = { width: 375, height: 667 };
  readonly scale = 2;
  orientation: Orientation = 'PORTRAIT';
  foreground: string | undefined;
  readonly running = new Set<string>();
  locked = false;
  volume = 8;
  focused: 'note' | 'url' | undefined;
  notesText = '';
  /** When the Clock's stopwatch started, while the Clock runs: a screen that changes on every picture, as a game's does. */
  stopwatchStartedAt: number | undefined;
  safariUrl = '';
  addressText = '';
  settingsPage: 'main' | 'wifi' | 'general' = 'main';
  /** How far (points) Settings' list is scrolled up from its top. */
  settingsScroll = 0;
  wifi = true;
  /** The general pasteboard's plain text: what WDA's setPasteboard put there. */
  pasteboard = '';
  /** Taps on a user app's "Tap me" button, by bundle id. */
  readonly taps = new Map<string, number>();
  lastTap: { x: number; y: number } | undefined;
  lastLongPress: { x: number; y: number; durationMs: number } | undefined;
  lastSwipe: { fromX: number; fromY: number; toX: number; toY: number } | undefined;
  rev = 0;
  /** Where SpringBoard's log lines go (the phone's syslog_relay). */
  log: (process: string, message: string) => void = () => undefined;
  private cache: { rev: number; tree?: AxNode; canvas?: Canvas; png?: Buffer; jpeg?: Map<number, Promise<Buffer>>; stopwatch?: string } = { rev: -1 };

  constructor(
    readonly apps: Map<string, InstalledApp>,
    readonly device: { name: () => string; version: string; battery: () => number },
  ) {}

  changed(): void {
    this.rev++;
  }

  /** The window in points, as WDA's /window/size reports it for the current orientation. */
  window(): { width: number; height: number } {
    return this.orientation === 'PORTRAIT' ? { ...this.size } : { width: this.size.height, height: this.size.width };
  }

  /**
   * A fresh boot: no app running, the lock screen, portrait, nothing typed unsaved. Saved state (the note, Wi-Fi,
   * the volume, installed apps) stays, as it does on a phone that restarts.
   */
  boot(): void {
    this.running.clear();
    this.stopwatchStartedAt = undefined;
    this.foreground = undefined;
    this.focused = undefined;
    this.addressText = '';
    this.settingsPage = 'main';
    this.settingsScroll = 0;
    this.orientation = 'PORTRAIT';
    this.locked = true;
    this.changed();
  }

  // ---- what WDA's commands do ----

  launch(bundleId: string): void {
    if (!this.apps.has(bundleId)) throw new Error(`The application '${bundleId}' is not installed on the device`);
    this.locked = false;
    this.foreground = bundleId;
    this.running.add(bundleId);
    this.focused = undefined;
    if (bundleId === CLOCK) this.stopwatchStartedAt ??= Date.now();
    this.log('SpringBoard', `Launching application ${bundleId}`);
    this.changed();
  }

  terminate(bundleId: string): boolean {
    const wasRunning = this.running.delete(bundleId);
    if (bundleId === CLOCK) this.stopwatchStartedAt = undefined;
    if (this.foreground === bundleId) {
      this.foreground = undefined;
      this.focused = undefined;
    }
    if (bundleId === SETTINGS) {
      this.settingsPage = 'main';
      this.settingsScroll = 0;
    }
    if (wasRunning) this.log('SpringBoard', `Application ${bundleId} terminated`);
    this.changed();
    return wasRunning;
  }

  state(bundleId: string): number {
    if (this.foreground === bundleId) return APP_STATE.RUNNING_FOREGROUND;
    return this.running.has(bundleId) ? APP_STATE.RUNNING_BACKGROUND : APP_STATE.NOT_RUNNING;
  }

  /** Removes an uninstalled app from the screen. */
  forget(bundleId: string): void {
    this.running.delete(bundleId);
    if (this.foreground === bundleId) this.foreground = undefined;
    this.changed();
  }

  home(): void {
    if (this.locked) return;
    this.foreground = undefined;
    this.focused = undefined;
    this.changed();
  }

  pressButton(name: string): void {
    if (name === 'home') this.home();
    else if (name === 'volumeUp') this.volume = Math.min(16, this.volume + 1);
    else if (name === 'volumeDown') this.volume = Math.max(0, this.volume - 1);
    else throw new Error(`The button '${name}' is unknown. Only the following button names are supported: home, volumeUp, volumeDown`);
    this.changed();
  }

  lock(): void {
    this.locked = true;
    this.focused = undefined;
    this.changed();
  }

  unlock(): void {
    this.locked = false;
    this.changed();
  }

  openUrl(url: string): void {
    if (/^https?:/i.test(url)) {
      this.launch(SAFARI);
      this.safariUrl = url;
      this.addressText = url;
    } else if (/^(prefs|app-settings):/i.test(url)) {
      this.launch(SETTINGS);
    } else {
      throw new Error(`No application can open ${url}`);
    }
    this.changed();
  }

  setOrientation(orientation: Orientation): void {
    this.orientation = orientation;
    this.changed();
  }

  /** Typing goes to the focused field; with none, WDA refuses as XCTest does. */
  type(text: string): void {
    if (!this.focused) throw new Error('Neither the application nor any of its elements have keyboard focus');
    for (const ch of text) {
      const field = this.focused === 'note' ? this.notesText : this.addressText;
      let next: string;
      if (ch === '\b' || ch === '\uE003') next = field.slice(0, -1);
      else if (ch === '\n' || ch === '\uE007') {
        if (this.focused === 'url') {
          this.safariUrl = /^[a-z][a-z0-9+.-]*:/i.test(field) ? field : `https://${field}`;
          this.addressText = this.safariUrl;
          this.focused = undefined;
          continue;
        }
        next = field + '\n';
      } else next = field + ch;
      if (this.focused === 'note') this.notesText = next;
      else this.addressText = next;
    }
    this.changed();
  }

  tap(x: number, y: number): void {
    this.lastTap = { x, y };
    this.changed();
    hit(this.tree(), x, y, 'tap')?.onTap?.();
  }

  longPress(x: number, y: number, durationMs: number): void {
    this.lastLongPress = { x, y, durationMs };
    this.changed();
    const target = hit(this.tree(), x, y, 'long') ?? hit(this.tree(), x, y, 'tap');
    if (target?.onLongPress) target.onLongPress();
    else target?.onTap?.();
  }

  /** A finger that went down at (x1, y1), travelled to (x2, y2) and lifted after `durationMs`. */
  gesture(x1: number, y1: number, x2: number, y2: number, durationMs: number): void {
    if (Math.hypot(x2 - x1, y2 - y1) < TOUCH_SLOP) {
      if (durationMs >= LONG_PRESS_MS) this.longPress(x1, y1, durationMs);
      else this.tap(x1, y1);
      return;
    }
    this.lastSwipe = { fromX: x1, fromY: y1, toX: x2, toY: y2 };
    const { height } = this.window();
    if (this.locked && y1 - y2 > height * 0.15) this.locked = false;
    // Swiping up from the home indicator leaves the app.
    else if (this.foreground && y1 > height - 30 && y1 - y2 > 100) this.home();
    // Anywhere else the scroll view under the finger's start follows it.
    else scrollable(this.tree(), x1, y1)?.onScroll?.(x1 - x2, y1 - y2);
    this.changed();
  }

  // ---- the accessibility tree ----

  tree(): AxNode {
    // The running stopwatch in front: each new hundredth is a new screen.
    if (this.foreground === CLOCK && !this.locked && this.cache.stopwatch !== this.stopwatch()) this.changed();
    if (this.cache.rev !== this.rev) this.cache = { rev: this.rev };
    this.cache.tree ??= this.build();
    return this.cache.tree;
  }

  private build(): AxNode {
    const { width, height } = this.window();
    const name = this.foreground ? this.apps.get(this.foreground)?.name ?? this.foreground : ' ';
    const app = node('XCUIElementTypeApplication', 0, 0, width, height, { name, label: name });
    const window = node('XCUIElementTypeWindow', 0, 0, width, height);
    app.children.push(window);
    const statusBar = node('XCUIElementTypeStatusBar', 0, 0, width, STATUS_BAR, {
      children: [node('XCUIElementTypeOther', width - 60, 0, 60, STATUS_BAR, { name: `${this.device.battery()} % battery power`, label: `${this.device.battery()} % battery power` })],
    });
    window.children.push(statusBar);
    if (this.locked) {
      window.children.push(node('XCUIElementTypeStaticText', 0, 120, width, 60, { name: '9:41', label: '9:41' }));
      window.children.push(node('XCUIElementTypeStaticText', 0, height - 60, width, 20, { name: 'Swipe up to open', label: 'Swipe up to open' }));
      return app;
    }
    if (!this.foreground) window.children.push(this.homeScreen(width));
    else if (this.foreground === SETTINGS) window.children.push(...this.settings(width, height));
    else if (this.foreground === SAFARI) window.children.push(...this.safari(width, height));
    else if (this.foreground === NOTES) window.children.push(...this.notes(width, height));
    else if (this.foreground === CLOCK) window.children.push(...this.clock(width, height));
    else window.children.push(...this.userApp(this.foreground, width, height));
    if (this.focused) window.children.push(this.keyboard(width, height));
    return app;
  }

  /**
   * The software keyboard while a field has focus: its keys in one view, as XCTest finds them, the return key named
   * for the field (Safari's address bar goes, a note takes a new line). Tapping a key types it.
   */
  private keyboard(width: number, height: number): AxNode {
    const top = height - KEYBOARD;
    const rowHeight = KEYBOARD / 4;
    const keyWidth = width / 10;
    const key = (type: string, name: string, label: string, x: number, row: number, w: number, text: string) =>
      node(type, Math.round(x), Math.round(top + row * rowHeight + 4), Math.round(w - 6), Math.round(rowHeight - 10), { name, label, onTap: () => this.type(text) });
    const letters = (row: number, chars: string, inset: number) => [...chars].map((ch, i) => key('XCUIElementTypeKey', ch, ch, inset + i * keyWidth + 3, row, keyWidth, ch));
    const go = this.focused === 'url';
    const keys = [
      ...letters(0, 'qwertyuiop', 0),
      ...letters(1, 'asdfghjkl', keyWidth / 2),
      node('XCUIElementTypeButton', 3, Math.round(top + 2 * rowHeight + 4), Math.round(keyWidth * 1.4 - 6), Math.round(rowHeight - 10), { name: 'shift', label: 'shift' }),
      ...letters(2, 'zxcvbnm', keyWidth * 1.5),
      key('XCUIElementTypeKey', 'delete', 'delete', width - keyWidth * 1.4 + 3, 2, keyWidth * 1.4, '\b'),
      node('XCUIElementTypeKey', 3, Math.round(top + 3 * rowHeight + 4), Math.round(keyWidth * 1.4 - 6), Math.round(rowHeight - 10), { name: 'more', label: 'numbers' }),
      key('XCUIElementTypeKey', 'space', 'space', keyWidth * 1.4 + 3, 3, width - keyWidth * 3.8, ' '),
      key('XCUIElementTypeButton', go ? 'Go' : 'Return', go ? 'go' : 'return', width - keyWidth * 2.4 + 3, 3, keyWidth * 2.4, '\n'),
    ];
    return node('XCUIElementTypeKeyboard', 0, top, width, KEYBOARD, {
      children: [node('XCUIElementTypeOther', 0, top, width, KEYBOARD, { children: keys })],
    });
  }

  private homeScreen(width: number): AxNode {
    const list = [...SYSTEM_APPS.filter((a) => this.apps.has(a.bundleId)), ...[...this.apps.values()].filter((a) => a.type === 'User').sort((a, b) => a.name.localeCompare(b.name))];
    const columns = 4;
    const cell = width / columns;
    const icons = list.map((app, i) => {
      const x = Math.round((i % columns) * cell + (cell - ICON) / 2);
      const y = STATUS_BAR + 24 + Math.floor(i / columns) * 96;
      return node('XCUIElementTypeIcon', x, y, ICON, ICON + 18, {
        name: app.name,
        label: app.name,
        onTap: () => this.launch(app.bundleId),
        onLongPress: () => undefined,
      });
    });
    return node('XCUIElementTypeOther', 0, STATUS_BAR, width, this.window().height - STATUS_BAR, { name: 'Home screen icons', children: icons });
  }

  private navBar(width: number, title: string, back?: { label: string; go: () => void }): AxNode {
    const bar = node('XCUIElementTypeNavigationBar', 0, STATUS_BAR, width, NAV_BAR, { name: title });
    bar.children.push(node('XCUIElementTypeStaticText', width / 2 - 80, STATUS_BAR + 10, 160, 24, { name: title, label: title, value: title }));
    if (back) bar.children.push(node('XCUIElementTypeButton', 4, STATUS_BAR + 6, 96, 32, { name: back.label, label: back.label, onTap: back.go }));
    return bar;
  }

  private settings(width: number, height: number): AxNode[] {
    const top = STATUS_BAR + NAV_BAR + 16;
    const row = (i: number, label: string, value: string | undefined, onTap?: () => void, scrolled = 0) =>
      node('XCUIElementTypeCell', 0, top + i * 44 - scrolled, width, 44, {
        name: label,
        label,
        value,
        onTap,
        children: [node('XCUIElementTypeStaticText', 16, top + i * 44 - scrolled + 12, 200, 20, { name: label, label, value: label })],
      });
    const back = { label: 'Settings', go: () => ((this.settingsPage = 'main'), this.changed()) };
    if (this.settingsPage === 'wifi') {
      const toggle = node('XCUIElementTypeSwitch', width - 70, top + 6, 51, 31, {
        name: 'Wi-Fi', label: 'Wi-Fi', value: this.wifi ? '1' : '0', onTap: () => ((this.wifi = !this.wifi), this.changed()),
      });
      const cell = row(0, 'Wi-Fi', this.wifi ? '1' : '0');
      cell.children.push(toggle);
      return [this.navBar(width, 'Wi-Fi', back), node('XCUIElementTypeTable', 0, top, width, 44, { children: [cell] })];
    }
    if (this.settingsPage === 'general') {
      return [
        this.navBar(width, 'General', back),
        node('XCUIElementTypeTable', 0, top, width, 88, {
          children: [row(0, 'Name', this.device.name()), row(1, 'iOS Version', this.device.version)],
        }),
      ];
    }
    const open = (page: 'wifi' | 'general') => () => ((this.settingsPage = page), this.changed());
    const items: Array<[string, string | undefined, (() => void) | undefined]> = [
      ['Wi-Fi', this.wifi ? 'On' : 'Off', open('wifi')],
      ['Bluetooth', 'On', undefined],
      ['General', undefined, open('general')],
      ['Battery', `${this.device.battery()}%`, undefined],
      // Rows with nothing behind them: they make the list longer than the screen, so it scrolls as an iPhone's does.
      ...['Cellular', 'Notifications', 'Sounds & Haptics', 'Focus', 'Screen Time', 'Control Center', 'Display & Brightness', 'Accessibility', 'Wallpaper', 'Privacy & Security', 'App Store', 'Passwords']
        .map((label): [string, undefined, undefined] => [label, undefined, undefined]),
    ];
    // A UITableView: as tall as the screen below the bar, with cells only for the rows in view.
    const tableHeight = height - top;
    const maxScroll = Math.max(0, items.length * 44 - tableHeight);
    const offset = Math.min(this.settingsScroll, maxScroll);
    const cells = items.map(([label, value, onTap], i) => row(i, label, value, onTap, offset)).filter((cell) => cell.y >= top && cell.y < height);
    const onScroll = (_dx: number, dy: number) => {
      const next = Math.round(Math.max(0, Math.min(maxScroll, offset + dy)));
      if (next === offset) return false;
      this.settingsScroll = next;
      this.changed();
      return true;
    };
    return [this.navBar(width, 'Settings'), node('XCUIElementTypeTable', 0, top, width, tableHeight, { children: cells, onScroll })];
  }

  private safari(width: number, height: number): AxNode[] {
    const field = node('XCUIElementTypeTextField', 12, STATUS_BAR + 6, width - 24, 32, {
      name: 'URL', label: 'Address', value: this.focused === 'url' ? this.addressText : this.safariUrl || 'Search or enter website name', focused: this.focused === 'url',
      onTap: () => ((this.focused = 'url'), (this.addressText = this.safariUrl), this.changed()),
    });
    const title = this.safariUrl ? this.safariUrl.replace(/^[a-z]+:\/\//i, '').split('/')[0]! : 'Start Page';
    const page = node('XCUIElementTypeWebView', 0, STATUS_BAR + NAV_BAR, width, height - STATUS_BAR - NAV_BAR, {
      children: [node('XCUIElementTypeStaticText', 16, STATUS_BAR + NAV_BAR + 40, width - 32, 24, { name: title, label: title, value: title })],
    });
    return [field, page];
  }

  private notes(width: number, height: number): AxNode[] {
    const body = node('XCUIElementTypeTextView', 16, STATUS_BAR + NAV_BAR + 8, width - 32, height - STATUS_BAR - NAV_BAR - 40, {
      name: 'note', label: 'Note', value: this.notesText, focused: this.focused === 'note', onTap: () => ((this.focused = 'note'), this.changed()),
    });
    return [this.navBar(width, 'Notes'), body];
  }

  /** The stopwatch's reading, mm:ss.hh, as the Clock shows it. */
  private stopwatch(): string {
    const hundredths = Math.floor((Date.now() - (this.stopwatchStartedAt ?? Date.now())) / 10);
    const two = (n: number) => String(n).padStart(2, '0');
    return `${two(Math.floor(hundredths / 6000) % 100)}:${two(Math.floor(hundredths / 100) % 60)}.${two(hundredths % 100)}`;
  }

  private clock(width: number, height: number): AxNode[] {
    const reading = (this.cache.stopwatch = this.stopwatch());
    return [
      this.navBar(width, 'Stopwatch'),
      node('XCUIElementTypeStaticText', 16, height / 2 - 60, width - 32, 24, { name: 'stopwatch', label: reading, value: reading }),
    ];
  }

  private userApp(bundleId: string, width: number, height: number): AxNode[] {
    const app = this.apps.get(bundleId)!;
    const count = this.taps.get(bundleId) ?? 0;
    const message = count ? `Tapped ${count} times` : `Hello from ${app.name}`;
    return [
      this.navBar(width, app.name),
      node('XCUIElementTypeStaticText', 16, height / 2 - 60, width - 32, 24, { name: message, label: message, value: message }),
      node('XCUIElementTypeButton', width / 2 - 60, height / 2, 120, 44, {
        name: 'Tap me', label: 'Tap me', onTap: () => (this.taps.set(bundleId, count + 1), this.changed()),
      }),
    ];
  }

  // ---- the picture ----

  canvas(): Canvas {
    this.tree();
    this.cache.canvas ??= this.render();
    return this.cache.canvas;
  }

  png(): Buffer {
    const c = this.canvas();
    this.cache.png ??= encodePng(c);
    return this.cache.png;
  }

  /**
   * A JPEG of the screen at WDA's mjpegServerScreenshotQuality, encoded once per screen state and quality, by
   * libjpeg-turbo as a real iPhone's hardware encoder would be, off the event loop (../android/jpeg.ts): jpeg-js, pure
   * JavaScript, took a third of the CPU of a test that watched an iPhone.
   */
  jpeg(quality: number): Promise<Buffer> {
    const c = this.canvas();
    const cache = (this.cache.jpeg ??= new Map());
    let frame = cache.get(quality);
    if (!frame) {
      frame = encodeJpeg(c, c.width, c.height, quality);
      cache.set(quality, frame);
      // A failed encoding is not kept: the next frame asks again.
      frame.catch(() => cache.delete(quality));
    }
    return frame;
  }

  private render(): Canvas {
    const s = this.scale;
    const { width, height } = this.window();
    const tree = this.cache.tree!;
    const app = this.foreground;
    const c = new Canvas(width * s, height * s, this.locked || !app ? WALLPAPER : app === SETTINGS ? GROUPED : WHITE);
    const text = (t: string, x: number, y: number, color: Rgb, size = 2, maxWidth = width - x - 8) =>
      c.text(ellipsize(t, size * s / 2, maxWidth * s), x * s, y * s, (size * s) / 2, color);
    const draw = (n: AxNode) => {
      const [x, y, w, h] = [n.x * s, n.y * s, n.width * s, n.height * s];
      switch (n.type) {
        case 'XCUIElementTypeIcon': {
          const bundle = [...this.apps.values()].find((a) => a.name === n.name)?.bundleId ?? '';
          c.fillRoundRect(x, y, ICON * s, ICON * s, 14 * s, colorOf(bundle));
          c.text(n.name!.slice(0, 1), x + 22 * s, y + 16 * s, 4 * s, WHITE);
          const label = ellipsize(n.name!, s, (ICON + 14) * s);
          c.text(label, x + (ICON * s - textWidth(label, s)) / 2, y + (ICON + 6) * s, s, WHITE);
          break;
        }
        case 'XCUIElementTypeNavigationBar':
          c.fillRect(x, y, w, h, app === SETTINGS ? GROUPED : [249, 249, 249]);
          c.fillRect(x, y + h - s, w, s, SEPARATOR);
          break;
        case 'XCUIElementTypeCell':
          c.fillRect(x, y, w, h, WHITE);
          c.fillRect(x + 16 * s, y + h - 1, w, 1, SEPARATOR);
          if (n.value && !n.children.some((k) => k.type === 'XCUIElementTypeSwitch')) text(n.value, n.x + n.width - 110, n.y + 14, GRAY, 2, 100);
          break;
        case 'XCUIElementTypeSwitch':
          c.fillRoundRect(x, y, w, h, h / 2, n.value === '1' ? [52, 199, 89] : SEPARATOR);
          c.fillCircle(n.value === '1' ? x + w - h / 2 : x + h / 2, y + h / 2, h / 2 - 2 * s, WHITE);
          break;
        case 'XCUIElementTypeButton':
          if (n.name === 'Tap me') c.fillRoundRect(x, y, w, h, 10 * s, BLUE);
          text(n.label ?? '', n.x + (n.name === 'Tap me' ? 26 : 8), n.y + 12, n.name === 'Tap me' ? WHITE : BLUE);
          break;
        case 'XCUIElementTypeTextField':
          c.fillRoundRect(x, y, w, h, 10 * s, [230, 230, 235]);
          text(n.value ?? '', n.x + 10, n.y + 10, this.focused === 'url' ? BLACK : GRAY, 2, n.width - 20);
          break;
        case 'XCUIElementTypeTextView': {
          const lines = (n.value || (this.focused === 'note' ? '' : 'Tap to write')).split('\n');
          lines.slice(0, 20).forEach((line, i) => text(line, n.x, n.y + 4 + i * 20, n.value ? BLACK : GRAY, 2, n.width));
          break;
        }
        case 'XCUIElementTypeStaticText':
          if (n.y >= STATUS_BAR) text(n.label ?? '', n.x, n.y + 4, this.locked || !app ? WHITE : BLACK, this.locked && n.name === '9:41' ? 6 : 2, n.width);
          break;
        case 'XCUIElementTypeKeyboard':
          c.fillRect(x, y, w, h, [209, 212, 217]);
          for (const k of n.children.flatMap((view) => view.children)) {
            c.fillRoundRect(k.x * s, k.y * s, k.width * s, k.height * s, 5 * s, k.name === 'Go' ? BLUE : WHITE);
            const caption = k.name!.length === 1 ? k.name! : k.label!;
            text(caption, k.x + (k.width - textWidth(caption, s) / s) / 2, k.y + k.height / 2 - 6, k.name === 'Go' ? WHITE : BLACK, 2, k.width);
          }
          return;
      }
      for (const child of n.children) draw(child);
    };
    draw(tree);
    // Status bar: time left, battery right.
    const barColor = this.locked || !app ? WHITE : BLACK;
    text('9:41', 12, 6, barColor);
    text(`${this.device.battery()}%`, width - 44, 6, barColor, 2, 40);
    if (app) c.fillRoundRect(((width - 134) / 2) * s, (height - 10) * s, 134 * s, 5 * s, 3 * s, BLACK);
    return c;
  }
}

/** The deepest scroll view under the point: the one a drag starting there moves. */
function scrollable(root: AxNode, x: number, y: number): AxNode | undefined {
  if (x < root.x || y < root.y || x >= root.x + root.width || y >= root.y + root.height) return undefined;
  for (let i = root.children.length - 1; i >= 0; i--) {
    const found = scrollable(root.children[i]!, x, y);
    if (found) return found;
  }
  return root.onScroll ? root : undefined;
}

/** The deepest element under the point that takes the gesture. */
function hit(root: AxNode, x: number, y: number, kind: 'tap' | 'long'): AxNode | undefined {
  if (x < root.x || y < root.y || x >= root.x + root.width || y >= root.y + root.height) return undefined;
  for (let i = root.children.length - 1; i >= 0; i--) {
    const found = hit(root.children[i]!, x, y, kind);
    if (found) return found;
  }
  return (kind === 'tap' ? root.onTap : root.onLongPress) ? root : undefined;
}
