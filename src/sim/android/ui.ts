import { Canvas, ellipsize, textHeight, textWidth, wrap, type Rgb } from './canvas.js';
import {
  ADB_KEYBOARD_IME,
  BROWSER_PACKAGE,
  CLOCK_PACKAGE,
  LAUNCHER_PACKAGE,
  NOTES_PACKAGE,
  SETTINGS_PACKAGE,
  SYSTEMUI_PACKAGE,
  type Device,
  type InstalledApp,
} from './device.js';

/**
 * The view hierarchy of whatever the phone shows. One tree feeds three consumers, so they cannot disagree:
 * the rasterizer (screencap), the uiautomator dump, and the hit test behind `input tap`.
 */

export interface Bounds {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

type Paint =
  | { kind: 'fill'; color: Rgb; radius?: number }
  | { kind: 'text'; text: string; scale: number; color: Rgb; align?: 'left' | 'center' }
  | { kind: 'lines'; lines: string[]; scale: number; color: Rgb; inset: number; centerSingle?: boolean; cursor?: boolean }
  | { kind: 'icon'; color: Rgb; letter: string; icon: Bounds; caption: string }
  | { kind: 'switch'; on: boolean }
  | { kind: 'border'; color: Rgb };

export interface UiNode {
  className: string;
  packageName: string;
  text: string;
  resourceId: string;
  contentDesc: string;
  bounds: Bounds;
  checkable: boolean;
  checked: boolean;
  clickable: boolean;
  enabled: boolean;
  focusable: boolean;
  focused: boolean;
  scrollable: boolean;
  longClickable: boolean;
  password: boolean;
  selected: boolean;
  /** An EditText's hint; while `showingHint`, its text is the hint, as accessibility reports it. */
  hint?: string;
  showingHint?: boolean;
  children: UiNode[];
  paint: Paint[];
  onTap?: () => void;
  onLongPress?: () => void;
  /** ACTION_SET_TEXT: what UiAutomator's setText and clear perform on an editable view. */
  onSetText?: (text: string) => void;
  /** Scrolls the content by (dx, dy) pixels of finger travel; returns whether it moved. */
  onScroll?: (dx: number, dy: number) => boolean;
}

const WHITE: Rgb = [255, 255, 255];
const BLACK: Rgb = [0, 0, 0];
const TEXT: Rgb = [0x20, 0x21, 0x24];
const SUBTLE: Rgb = [0x5f, 0x63, 0x68];
const HINT: Rgb = [0x9a, 0xa0, 0xa6];
const DIVIDER: Rgb = [0xe0, 0xe0, 0xe0];
const ACCENT: Rgb = [0x1a, 0x73, 0xe8];
const TAP_MARK: Rgb = [0xff, 0x40, 0x81];

function box(left: number, top: number, right: number, bottom: number): Bounds {
  return { left: Math.round(left), top: Math.round(top), right: Math.round(right), bottom: Math.round(bottom) };
}

function node(packageName: string, className: string, bounds: Bounds, extra: Partial<UiNode> = {}): UiNode {
  return {
    className,
    packageName,
    text: '',
    resourceId: '',
    contentDesc: '',
    bounds,
    checkable: false,
    checked: false,
    clickable: false,
    enabled: true,
    focusable: false,
    focused: false,
    scrollable: false,
    longClickable: false,
    password: false,
    selected: false,
    children: [],
    paint: [],
    ...extra,
  };
}

/** A TextView whose bounds hug its text, placed at (x, y) or centred on x when `center` is set. */
function label(
  pkg: string,
  text: string,
  x: number,
  y: number,
  scale: number,
  color: Rgb,
  extra: Partial<UiNode> & { center?: boolean; maxWidth?: number } = {},
): UiNode {
  const { center, maxWidth, ...rest } = extra;
  const shown = maxWidth ? ellipsize(text, scale, maxWidth) : text;
  const w = textWidth(shown, scale);
  const left = center ? x - w / 2 : x;
  return node(pkg, 'android.widget.TextView', box(left, y, left + w, y + textHeight(scale)), {
    text,
    paint: [{ kind: 'text', text: shown, scale, color }],
    ...rest,
  });
}

interface Layout {
  device: Device;
  width: number;
  height: number;
  dp: number;
  statusBar: number;
  toolbar: number;
  now: Date;
}

/** The focused window's tree, or undefined while the screen is off (uiautomator then has no root). */
export function buildWindow(device: Device, now: Date): UiNode | undefined {
  if (!device.awake) return undefined;
  const { width, height } = device.logicalSize;
  const dp = device.options.density / 160;
  const l: Layout = { device, width, height, dp, statusBar: Math.round(24 * dp), toolbar: Math.round(56 * dp), now };
  if (device.shade) return notificationShade(l);
  if (device.locked) return keyguard(l);
  if (device.screen === 'recents') return recents(l);
  const top = device.foreground;
  if (!top) return launcher(l);
  const app = device.apps.get(top.packageName)!;
  if (app.packageName === SETTINGS_PACKAGE) return settingsApp(l, app);
  if (app.packageName === BROWSER_PACKAGE) return browserApp(l, app);
  if (app.packageName === NOTES_PACKAGE) return notesApp(l, app);
  if (app.packageName === CLOCK_PACKAGE) return clockApp(l, app);
  return genericApp(l, app, top.activity);
}

function clock(now: Date): string {
  return `${String(now.getHours()).padStart(2, '0')}:${String(now.getMinutes()).padStart(2, '0')}`;
}

function keyguard(l: Layout): UiNode {
  const pkg = SYSTEMUI_PACKAGE;
  const { width: w, height: h, now } = l;
  const date = now.toLocaleDateString('en-US', { weekday: 'long', month: 'long', day: 'numeric' });
  return node(pkg, 'android.widget.FrameLayout', box(0, 0, w, h), {
    resourceId: 'com.android.systemui:id/keyguard_root_view',
    paint: [{ kind: 'fill', color: [0x1b, 0x26, 0x3b] }],
    children: [
      label(pkg, clock(now), w / 2, h * 0.2, 16, WHITE, { center: true, resourceId: 'com.android.systemui:id/clock' }),
      label(pkg, date, w / 2, h * 0.2 + 16 * 7 + 40, 3, [0xcf, 0xd8, 0xdc], { center: true, resourceId: 'com.android.systemui:id/date' }),
      label(pkg, 'Swipe up to unlock', w / 2, h - 80 * l.dp, 3, [0xcf, 0xd8, 0xdc], {
        center: true,
        resourceId: 'com.android.systemui:id/keyguard_indication_text',
      }),
    ],
  });
}

/**
 * The notification shade pulled down (its own window, so what uiautomator dumps while it is open): the clock, the
 * quick settings tiles, which read and flip the phone's Wi-Fi and Bluetooth, and the notifications, of which the
 * simulated apps post none.
 */
function notificationShade(l: Layout): UiNode {
  const pkg = SYSTEMUI_PACKAGE;
  const { device, width: w, height: h, dp, now } = l;
  const id = (name: string) => `com.android.systemui:id/${name}`;
  const tileW = (w - 48 * dp) / 2;
  const tileH = 72 * dp;
  const tileTop = l.statusBar + 56 * dp;
  const tile = (i: number, title: string, state: string, on: boolean, toggle: () => void) => {
    const x = 16 * dp + i * (tileW + 16 * dp);
    return node(pkg, 'android.widget.Switch', box(x, tileTop, x + tileW, tileTop + tileH), {
      contentDesc: title,
      checkable: true,
      checked: on,
      clickable: true,
      focusable: true,
      paint: [{ kind: 'fill', color: on ? [0xa8, 0xc7, 0xfa] : [0x3c, 0x40, 0x43], radius: 24 * dp }],
      onTap: toggle,
      children: [
        label(pkg, title, x + 20 * dp, tileTop + 14 * dp, 3, on ? TEXT : WHITE, { resourceId: id('tile_label'), maxWidth: tileW - 32 * dp }),
        label(pkg, state, x + 20 * dp, tileTop + 44 * dp, 2, on ? TEXT : [0xbd, 0xc1, 0xc6], { resourceId: id('app_label'), maxWidth: tileW - 32 * dp }),
      ],
    });
  };
  const tiles = node(pkg, 'android.view.ViewGroup', box(0, tileTop, w, tileTop + tileH), {
    resourceId: id('quick_settings_panel'),
    children: [
      tile(0, 'Internet', device.wifi ? 'BenchtopLab' : 'Wi-Fi off', device.wifi, () => device.setWifi(!device.wifi)),
      tile(1, 'Bluetooth', device.bluetooth ? 'On' : 'Off', device.bluetooth, () => device.setBluetooth(!device.bluetooth)),
    ],
  });
  const listTop = tileTop + tileH + 32 * dp;
  const notifications = node(pkg, 'android.widget.ScrollView', box(0, listTop, w, h), {
    resourceId: id('notification_stack_scroller'),
    children: [label(pkg, 'No notifications', w / 2, listTop + 24 * dp, 3, [0xbd, 0xc1, 0xc6], { center: true, resourceId: id('no_notifications') })],
  });
  return node(pkg, 'android.widget.FrameLayout', box(0, 0, w, h), {
    resourceId: id('notification_shade'),
    paint: [{ kind: 'fill', color: [0x20, 0x21, 0x24] }],
    children: [label(pkg, clock(now), 16 * dp, l.statusBar + 12 * dp, 4, WHITE, { resourceId: id('clock') }), tiles, notifications],
  });
}

/**
 * The input method's window, over the bottom of the app while it shows: ADB Keyboard's one-line bar, or the AOSP
 * keyboard's keys, which type as a finger on them does.
 */
export function imeWindow(device: Device): UiNode | undefined {
  if (!device.imeShown || !device.imeHasView) return undefined;
  const { width: w, height: h } = device.logicalSize;
  const dp = device.options.density / 160;
  if (device.settings.secure.get('default_input_method') === ADB_KEYBOARD_IME) {
    const pkg = 'com.android.adbkeyboard';
    const top = h - 48 * dp;
    return node(pkg, 'android.widget.FrameLayout', box(0, top, w, h), {
      paint: [{ kind: 'fill', color: [0x42, 0x42, 0x42] }],
      children: [label(pkg, 'ADB Keyboard {ON}', w / 2, top + 16 * dp, 3, WHITE, { center: true })],
    });
  }
  const pkg = 'com.android.inputmethod.latin';
  const rows = ['qwertyuiop', 'asdfghjkl', 'zxcvbnm', ' '];
  const rowH = 52 * dp;
  const top = h - rows.length * rowH - 8 * dp;
  const keyW = w / 10;
  const keys = rows.flatMap((row, r) =>
    [...row].map((ch, i) => {
      const width = ch === ' ' ? keyW * 5 : keyW;
      const x = ch === ' ' ? keyW * 2.5 : (w - row.length * keyW) / 2 + i * keyW;
      const y = top + r * rowH;
      return node(pkg, 'android.widget.TextView', box(x + 3 * dp, y + 4 * dp, x + width - 3 * dp, y + rowH - 4 * dp), {
        text: ch,
        clickable: true,
        paint: [{ kind: 'fill', color: WHITE, radius: 6 * dp }, { kind: 'text', text: ch, scale: 3, color: TEXT, align: 'center' }],
        onTap: () => device.typeText(ch),
      });
    }),
  );
  return node(pkg, 'android.widget.FrameLayout', box(0, top - 8 * dp, w, h), {
    resourceId: 'com.android.inputmethod.latin:id/keyboard_view',
    paint: [{ kind: 'fill', color: [0xe8, 0xea, 0xed] }],
    children: keys,
  });
}

function launcher(l: Layout): UiNode {
  const pkg = LAUNCHER_PACKAGE;
  const { device, width: w, height: h, dp } = l;
  const columns = Math.max(4, Math.floor(w / (90 * dp)));
  const cellW = Math.floor(w / columns);
  const cellH = Math.round(104 * dp);
  const iconSize = Math.round(56 * dp);
  const top0 = l.statusBar + 16 * dp;
  const icons = device.launcherApps().map((app, i) => {
    const x = (i % columns) * cellW;
    const y = top0 + Math.floor(i / columns) * cellH;
    const b = box(x, y, x + cellW, y + cellH);
    const iconX = x + (cellW - iconSize) / 2;
    const iconY = y + 8 * dp;
    return node(pkg, 'android.widget.TextView', b, {
      text: app.label,
      contentDesc: app.label,
      clickable: true,
      focusable: true,
      longClickable: true,
      paint: [
        {
          kind: 'icon',
          color: app.color,
          letter: app.label.charAt(0).toUpperCase(),
          icon: box(iconX, iconY, iconX + iconSize, iconY + iconSize),
          caption: ellipsize(app.label, 2, cellW - 8 * dp),
        },
      ],
      onTap: () => device.launch(app.packageName),
      onLongPress: () => {
        device.popup = { packageName: app.packageName, x: b.left, y: b.bottom };
        device.changed();
      },
    });
  });
  const workspace = node(pkg, 'android.view.ViewGroup', box(0, l.statusBar, w, h), {
    resourceId: 'com.android.launcher3:id/workspace',
    // No paging: icons past the bottom edge are simply not on screen, and so not in the dump either.
    children: icons.filter((icon) => icon.bounds.bottom <= h),
  });
  const children = [workspace];
  if (device.popup) {
    const app = device.apps.get(device.popup.packageName);
    if (app) {
      const pw = 200 * dp;
      const ph = 56 * dp;
      const px = Math.min(device.popup.x + 8 * dp, w - pw - 8 * dp);
      const py = Math.min(device.popup.y, h - ph - 8 * dp);
      const item = node(pkg, 'android.widget.TextView', box(px, py, px + pw, py + ph), {
        text: 'App info',
        clickable: true,
        focusable: true,
        paint: [{ kind: 'text', text: 'App info', scale: 3, color: TEXT, align: 'center' }],
        onTap: () => device.openSettingsPage(`appinfo:${app.packageName}`),
      });
      children.push(
        node(pkg, 'android.widget.LinearLayout', box(px, py, px + pw, py + ph), {
          resourceId: 'com.android.launcher3:id/deep_shortcuts_container',
          paint: [{ kind: 'fill', color: WHITE, radius: 12 * dp }],
          children: [item],
        }),
      );
    }
  }
  return node(pkg, 'android.widget.FrameLayout', box(0, 0, w, h), {
    resourceId: 'com.android.launcher3:id/launcher',
    paint: [{ kind: 'fill', color: [0x23, 0x5b, 0x6e] }],
    children,
  });
}

function recents(l: Layout): UiNode {
  const pkg = LAUNCHER_PACKAGE;
  const { device, width: w, height: h, dp } = l;
  const children: UiNode[] = [];
  if (device.tasks.length === 0) {
    children.push(label(pkg, 'No recent items', w / 2, h / 2, 3, WHITE, { center: true }));
  } else {
    const cardH = 96 * dp;
    let y = l.statusBar + 24 * dp;
    for (const task of device.tasks) {
      if (y + cardH > h - 96 * dp) break;
      const app = device.apps.get(task.packageName);
      if (!app) continue;
      const card = node(pkg, 'android.widget.FrameLayout', box(24 * dp, y, w - 24 * dp, y + cardH), {
        resourceId: 'com.android.launcher3:id/snapshot',
        contentDesc: app.label,
        clickable: true,
        focusable: true,
        paint: [{ kind: 'fill', color: [0xf1, 0xf3, 0xf4], radius: 16 * dp }],
        onTap: () => device.launch(task.packageName, task.activity),
        children: [
          label(pkg, app.label, 40 * dp, y + 24 * dp, 3, TEXT, { resourceId: 'com.android.launcher3:id/title' }),
          label(pkg, shortActivity(task.packageName, task.activity), 40 * dp, y + 56 * dp, 2, SUBTLE),
        ],
      });
      children.push(card);
      y += cardH + 16 * dp;
    }
    const clear = label(pkg, 'Clear all', w / 2, h - 64 * dp, 3, WHITE, {
      center: true,
      className: 'android.widget.Button',
      resourceId: 'com.android.launcher3:id/clear_all',
      clickable: true,
      focusable: true,
      onTap: () => {
        for (const t of [...device.tasks]) device.forceStop(t.packageName);
        device.screen = 'home';
        device.changed();
      },
    });
    children.push(clear);
  }
  return node(pkg, 'android.widget.FrameLayout', box(0, 0, w, h), {
    resourceId: 'com.android.launcher3:id/overview_panel',
    paint: [{ kind: 'fill', color: [0x30, 0x33, 0x36] }],
    children,
  });
}

export function shortActivity(pkg: string, cls: string): string {
  return cls.startsWith(pkg + '.') ? cls.slice(pkg.length) : cls;
}

/** Toolbar plus content area, as an AppCompat activity lays itself out. */
function appFrame(l: Layout, app: InstalledApp, title: string, body: UiNode[], up?: () => void): UiNode {
  const pkg = app.packageName;
  const { width: w, height: h, dp } = l;
  const top = l.statusBar;
  const bar: UiNode[] = [];
  let titleX = 16 * dp;
  if (up) {
    bar.push(
      node(pkg, 'android.widget.ImageButton', box(0, top, l.toolbar, top + l.toolbar), {
        contentDesc: 'Navigate up',
        clickable: true,
        focusable: true,
        paint: [{ kind: 'text', text: '<', scale: 5, color: WHITE, align: 'center' }],
        onTap: up,
      }),
    );
    titleX = l.toolbar;
  }
  bar.push(label(pkg, title, titleX, top + (l.toolbar - textHeight(4)) / 2, 4, WHITE, { maxWidth: w - titleX - 16 * dp }));
  const toolbar = node(pkg, 'android.view.ViewGroup', box(0, top, w, top + l.toolbar), {
    resourceId: `${pkg}:id/toolbar`,
    paint: [{ kind: 'fill', color: app.color }],
    children: bar,
  });
  const content = node(pkg, 'android.widget.LinearLayout', box(0, top, w, h), {
    resourceId: 'android:id/content',
    children: [toolbar, ...body],
  });
  return node(pkg, 'android.widget.FrameLayout', box(0, 0, w, h), {
    paint: [{ kind: 'fill', color: WHITE }],
    children: [content],
  });
}

interface Row {
  title: string;
  summary?: string;
  onTap?: () => void;
  toggle?: boolean;
}

/** A list that scrolls by whole rows: `offset` rows are above the top, and `scrollTo` moves it. */
interface RowScroll {
  offset: number;
  scrollTo: (rows: number) => void;
}

function rows(l: Layout, pkg: string, top: number, items: Row[], scroll?: RowScroll): UiNode {
  const { width: w, height: h, dp } = l;
  const rowH = 72 * dp;
  const maxOffset = scroll ? Math.max(0, items.length - Math.floor((h - top) / rowH)) : 0;
  const offset = Math.min(scroll?.offset ?? 0, maxOffset);
  // A RecyclerView lays out only the rows it shows: those scrolled above the top are not in the tree.
  const shown = items.slice(offset).filter((_, i) => top + i * rowH < h);
  const children = shown.map((item, i) => {
    const y = top + i * rowH;
    const kids: UiNode[] = [
      label(pkg, item.title, 16 * dp, y + (item.summary ? 16 * dp : (rowH - textHeight(3)) / 2), 3, TEXT, {
        resourceId: 'android:id/title',
        maxWidth: w - 96 * dp,
      }),
    ];
    if (item.summary !== undefined) {
      kids.push(
        label(pkg, item.summary, 16 * dp, y + 44 * dp, 2, SUBTLE, { resourceId: 'android:id/summary', maxWidth: w - 96 * dp }),
      );
    }
    if (item.toggle !== undefined) {
      kids.push(
        node(pkg, 'android.widget.Switch', box(w - 72 * dp, y + 20 * dp, w - 16 * dp, y + 52 * dp), {
          resourceId: 'android:id/switch_widget',
          text: item.toggle ? 'ON' : 'OFF',
          checkable: true,
          checked: item.toggle,
          focusable: true,
          paint: [{ kind: 'switch', on: item.toggle }],
        }),
      );
    }
    return node(pkg, 'android.widget.LinearLayout', box(0, y, w, y + rowH), {
      clickable: !!item.onTap,
      focusable: !!item.onTap,
      onTap: item.onTap,
      paint: [{ kind: 'border', color: DIVIDER }],
      children: kids,
    });
  });
  const onScroll = (_dx: number, dy: number) => {
    const next = Math.max(0, Math.min(maxOffset, offset + Math.round(dy / rowH)));
    if (next === offset) return false;
    scroll!.scrollTo(next);
    return true;
  };
  return node(pkg, 'androidx.recyclerview.widget.RecyclerView', box(0, top, w, h), {
    resourceId: `${pkg}:id/recycler_view`,
    focusable: true,
    scrollable: maxOffset > 0,
    onScroll: maxOffset > 0 ? onScroll : undefined,
    children,
  });
}

function settingsApp(l: Layout, app: InstalledApp): UiNode {
  const { device } = l;
  const top = l.statusBar + l.toolbar;
  const back = () => {
    device.settingsPage = 'main';
    device.changed();
  };
  const page = device.settingsPage;
  const open = (p: typeof page) => () => {
    device.settingsPage = p;
    device.changed();
  };
  const o = device.options;
  switch (page) {
    case 'main': {
      const items: Row[] = [
        { title: 'Wi-Fi', summary: device.wifi ? 'Connected to BenchtopLab' : 'Off', onTap: open('wifi') },
        { title: 'Bluetooth', summary: device.bluetooth ? 'On' : 'Off', onTap: open('bluetooth') },
        { title: 'Display', summary: `Auto-rotate ${device.settings.system.get('accelerometer_rotation') === '1' ? 'on' : 'off'}`, onTap: open('display') },
        { title: 'About phone', summary: o.model, onTap: open('about') },
        // Rows with nothing behind them: they make the list longer than the screen, so it scrolls as a phone's does.
        { title: 'Apps', summary: 'Recent apps, default apps' },
        { title: 'Notifications', summary: 'Notification history, conversations' },
        { title: 'Battery', summary: `${device.battery}%` },
        { title: 'Storage', summary: '38% used' },
        { title: 'Sound & vibration', summary: `Volume ${device.volume} of 15` },
        { title: 'Accessibility', summary: 'Display, interaction, audio' },
        { title: 'Security & privacy', summary: 'App security, device lock' },
        { title: 'Location', summary: 'On' },
        { title: 'System', summary: 'Languages, gestures, time, backup' },
      ];
      const scroll: RowScroll = {
        offset: device.settingsScroll,
        scrollTo: (rows) => {
          device.settingsScroll = rows;
          device.changed();
        },
      };
      return appFrame(l, app, 'Settings', [rows(l, app.packageName, top, items, scroll)]);
    }
    case 'wifi':
      return appFrame(l, app, 'Wi-Fi', [rows(l, app.packageName, top, [{ title: 'Use Wi-Fi', toggle: device.wifi, onTap: () => device.setWifi(!device.wifi) }])], back);
    case 'bluetooth':
      return appFrame(
        l,
        app,
        'Bluetooth',
        [rows(l, app.packageName, top, [{ title: 'Use Bluetooth', toggle: device.bluetooth, onTap: () => device.setBluetooth(!device.bluetooth) }])],
        back,
      );
    case 'display': {
      const auto = device.settings.system.get('accelerometer_rotation') === '1';
      const toggle = () => {
        device.settings.system.set('accelerometer_rotation', auto ? '0' : '1');
        device.changed();
      };
      return appFrame(l, app, 'Display', [rows(l, app.packageName, top, [{ title: 'Auto-rotate screen', toggle: auto, onTap: toggle }])], back);
    }
    case 'about':
      return appFrame(
        l,
        app,
        'About phone',
        [
          rows(l, app.packageName, top, [
            { title: 'Device name', summary: device.settings.global.get('device_name') ?? o.model },
            { title: 'Model', summary: o.model },
            { title: 'Android version', summary: o.osVersion },
            { title: 'Build number', summary: device.props.get('ro.build.display.id') ?? '' },
            { title: 'Serial number', summary: o.serialNo },
          ]),
        ],
        back,
      );
    default: {
      const pkgName = page.slice('appinfo:'.length);
      const target = device.apps.get(pkgName);
      if (!target) return appFrame(l, app, 'App info', [], back);
      return appFrame(
        l,
        app,
        'App info',
        [
          rows(l, app.packageName, top, [
            { title: target.label, summary: target.packageName },
            { title: 'Version', summary: target.versionName },
            { title: 'Force stop', onTap: () => device.forceStop(pkgName) },
          ]),
        ],
        back,
      );
    }
  }
}

function browserApp(l: Layout, app: InstalledApp): UiNode {
  const pkg = app.packageName;
  const { device, width: w, height: h, dp } = l;
  const top = l.statusBar;
  const b = device.browser;
  const shownUrl = b.urlFocused ? b.draft : b.url;
  const fieldScale = 3;
  const field = node(pkg, 'android.widget.EditText', box(12 * dp, top + 8 * dp, w - 12 * dp, top + l.toolbar - 8 * dp), {
    resourceId: 'com.android.chrome:id/url_bar',
    text: shownUrl || 'Search or type web address',
    hint: 'Search or type web address',
    showingHint: !shownUrl,
    clickable: true,
    focusable: true,
    focused: b.urlFocused,
    longClickable: true,
    paint: [
      { kind: 'fill', color: [0xf1, 0xf3, 0xf4], radius: 20 * dp },
      {
        kind: 'lines',
        lines: [ellipsize(shownUrl || 'Search or type web address', fieldScale, w - 48 * dp)],
        scale: fieldScale,
        color: shownUrl ? TEXT : HINT,
        inset: 16 * dp,
        centerSingle: true,
        cursor: b.urlFocused,
      },
    ],
    onTap: () => device.focusUrlBar(),
    onSetText: (text) => device.setUrlDraft(text),
  });
  const toolbar = node(pkg, 'android.widget.FrameLayout', box(0, top, w, top + l.toolbar), {
    resourceId: 'com.android.chrome:id/toolbar',
    paint: [{ kind: 'fill', color: WHITE }, { kind: 'border', color: DIVIDER }],
    children: [field],
  });
  const page = pageFor(b.url);
  const pageTop = top + l.toolbar;
  const bodyLines = wrap(page.body, 3, w - 48 * dp);
  const heading = label(pkg, page.title, 24 * dp, pageTop + 32 * dp, 5, TEXT, { maxWidth: w - 48 * dp });
  const bodyTop = pageTop + 32 * dp + textHeight(5) + 24 * dp;
  const body = node(pkg, 'android.widget.TextView', box(24 * dp, bodyTop, w - 24 * dp, bodyTop + bodyLines.length * 12 * 3), {
    text: page.body,
    paint: [{ kind: 'lines', lines: bodyLines, scale: 3, color: SUBTLE, inset: 0 }],
  });
  const web = node(pkg, 'android.webkit.WebView', box(0, pageTop, w, h), {
    text: page.title,
    focusable: true,
    scrollable: true,
    children: [heading, body],
  });
  return node(pkg, 'android.widget.FrameLayout', box(0, 0, w, h), {
    paint: [{ kind: 'fill', color: WHITE }],
    children: [node(pkg, 'android.widget.LinearLayout', box(0, top, w, h), { resourceId: 'android:id/content', children: [toolbar, web] })],
  });
}

function pageFor(url: string): { title: string; body: string } {
  if (url === 'about:blank') return { title: 'New tab', body: 'Type a web address above.' };
  try {
    const u = new URL(url);
    return { title: u.host || u.protocol.replace(':', ''), body: `You are viewing ${url}` };
  } catch {
    return { title: url, body: `You are viewing ${url}` };
  }
}

function notesApp(l: Layout, app: InstalledApp): UiNode {
  const pkg = app.packageName;
  const { device, width: w, height: h, dp } = l;
  const top = l.statusBar + l.toolbar;
  const n = device.notes;
  const empty = n.text === '';
  const scale = 3;
  const fieldBox = box(16 * dp, top + 16 * dp, w - 16 * dp, h - 16 * dp);
  const lines = empty ? ['Type a note'] : wrap(n.text, scale, fieldBox.right - fieldBox.left - 32 * dp);
  const field = node(pkg, 'android.widget.EditText', fieldBox, {
    resourceId: 'com.example.notes:id/note_text',
    // An empty EditText reports its hint as its accessibility text, which is what uiautomator shows.
    text: empty ? 'Type a note' : n.text,
    hint: 'Type a note',
    showingHint: empty,
    clickable: true,
    focusable: true,
    focused: n.focused,
    longClickable: true,
    paint: [
      { kind: 'fill', color: [0xff, 0xf8, 0xe1], radius: 8 * dp },
      { kind: 'border', color: n.focused ? ACCENT : DIVIDER },
      { kind: 'lines', lines, scale, color: empty ? HINT : TEXT, inset: 16 * dp, cursor: n.focused },
    ],
    onTap: () => device.focusNotes(),
    onSetText: (text) => device.setNotesText(text),
  });
  return appFrame(l, app, 'Notes', [field]);
}

/** The stopwatch, in hundredths of a second since the Clock started. */
function clockApp(l: Layout, app: InstalledApp): UiNode {
  const pkg = app.packageName;
  const { device, width: w, height: h, dp } = l;
  const elapsed = Math.max(0, l.now.getTime() - (device.stopwatchStartedAt ?? l.now.getTime()));
  const cs = Math.floor(elapsed / 10);
  const text = `${String(Math.floor(cs / 6000)).padStart(2, '0')}:${String(Math.floor(cs / 100) % 60).padStart(2, '0')}.${String(cs % 100).padStart(2, '0')}`;
  const mid = l.statusBar + l.toolbar + (h - l.statusBar - l.toolbar) / 2;
  return appFrame(l, app, 'Stopwatch', [
    label(pkg, text, w / 2, mid - 24 * dp, 6, TEXT, { center: true, resourceId: `${pkg}:id/stopwatch_time_text`, maxWidth: w - 32 * dp }),
  ]);
}

function genericApp(l: Layout, app: InstalledApp, activity: string): UiNode {
  const pkg = app.packageName;
  const { width: w, height: h, dp } = l;
  const mid = l.statusBar + l.toolbar + (h - l.statusBar - l.toolbar) / 2;
  return appFrame(l, app, app.label, [
    label(pkg, `Hello from ${app.label}`, w / 2, mid - 24 * dp, 3, TEXT, { center: true, resourceId: `${pkg}:id/message`, maxWidth: w - 32 * dp }),
    label(pkg, shortActivity(pkg, activity), w / 2, mid + 16 * dp, 2, SUBTLE, { center: true, maxWidth: w - 32 * dp }),
  ]);
}

// ---------------------------------------------------------------------------------------------------------
// Hit testing

/** The deepest, topmost node under the point that reacts to the gesture. */
export function hitTest(root: UiNode, x: number, y: number, gesture: 'tap' | 'long'): UiNode | undefined {
  const inside = (b: Bounds) => x >= b.left && x < b.right && y >= b.top && y < b.bottom;
  const visit = (n: UiNode): UiNode | undefined => {
    if (!inside(n.bounds)) return undefined;
    for (let i = n.children.length - 1; i >= 0; i--) {
      const hit = visit(n.children[i]!);
      if (hit) return hit;
    }
    return (gesture === 'tap' ? n.onTap : n.onLongPress) ? n : undefined;
  };
  return visit(root);
}

/** The deepest scrollable view under the point: the one a swipe starting there drags. */
export function scrollTarget(root: UiNode, x: number, y: number): UiNode | undefined {
  if (!contains(root, x, y)) return undefined;
  for (let i = root.children.length - 1; i >= 0; i--) {
    const hit = scrollTarget(root.children[i]!, x, y);
    if (hit) return hit;
  }
  return root.onScroll ? root : undefined;
}

export function contains(n: UiNode, x: number, y: number): boolean {
  return x >= n.bounds.left && x < n.bounds.right && y >= n.bounds.top && y < n.bounds.bottom;
}

// ---------------------------------------------------------------------------------------------------------
// uiautomator dump

function escapeXml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}

/** The exact shape `uiautomator dump` writes: one line, attributes in AccessibilityNodeInfoDumper's order. */
export function dumpXml(root: UiNode, rotation: number): string {
  const out: string[] = [`<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="${rotation}">`];
  const visit = (n: UiNode, index: number) => {
    const b = n.bounds;
    out.push(
      `<node index="${index}" text="${escapeXml(n.text)}" resource-id="${escapeXml(n.resourceId)}" class="${n.className}" ` +
        `package="${n.packageName}" content-desc="${escapeXml(n.contentDesc)}" checkable="${n.checkable}" checked="${n.checked}" ` +
        `clickable="${n.clickable}" enabled="${n.enabled}" focusable="${n.focusable}" focused="${n.focused}" ` +
        `scrollable="${n.scrollable}" long-clickable="${n.longClickable}" password="${n.password}" selected="${n.selected}" ` +
        `bounds="[${b.left},${b.top}][${b.right},${b.bottom}]"`,
    );
    if (n.children.length === 0) {
      out.push(' />');
      return;
    }
    out.push('>');
    n.children.forEach((c, i) => visit(c, i));
    out.push('</node>');
  };
  visit(root, 0);
  out.push('</hierarchy>');
  return out.join('');
}

// ---------------------------------------------------------------------------------------------------------
// Rasterizing

function paintNode(c: Canvas, n: UiNode, dp: number): void {
  const b = n.bounds;
  const w = b.right - b.left;
  const h = b.bottom - b.top;
  for (const p of n.paint) {
    switch (p.kind) {
      case 'fill':
        if (p.radius) c.fillRoundRect(b.left, b.top, w, h, p.radius, p.color);
        else c.fillRect(b.left, b.top, w, h, p.color);
        break;
      case 'border':
        c.fillRect(b.left, b.bottom - 2, w, 2, p.color);
        break;
      case 'text': {
        const tw = textWidth(p.text, p.scale);
        const x = p.align === 'center' ? b.left + (w - tw) / 2 : b.left;
        const y = p.align === 'center' ? b.top + (h - textHeight(p.scale)) / 2 : b.top;
        c.text(p.text, Math.round(x), Math.round(y), p.scale, p.color);
        break;
      }
      case 'lines': {
        const lineH = 12 * p.scale;
        let y = p.centerSingle ? b.top + (h - textHeight(p.scale)) / 2 : b.top + p.inset;
        const x = b.left + p.inset;
        let last = { x, y };
        for (const line of p.lines) {
          if (y + textHeight(p.scale) > b.bottom + 1) break;
          c.text(line, x, Math.round(y), p.scale, p.color);
          last = { x: x + textWidth(line, p.scale) + p.scale, y };
          y += lineH;
        }
        if (p.cursor) {
          const hint = p.color === HINT;
          c.fillRect(hint ? x - p.scale : last.x, last.y - p.scale, p.scale, textHeight(p.scale) + 2 * p.scale, ACCENT);
        }
        break;
      }
      case 'icon': {
        const size = p.icon.right - p.icon.left;
        c.fillRoundRect(p.icon.left, p.icon.top, size, size, size / 4, p.color);
        const scale = Math.max(2, Math.round(size / 16));
        const lx = p.icon.left + (size - textWidth(p.letter, scale)) / 2;
        c.text(p.letter, Math.round(lx), Math.round(p.icon.top + (size - textHeight(scale)) / 2), scale, WHITE);
        c.text(p.caption, Math.round(b.left + (w - textWidth(p.caption, 2)) / 2), p.icon.bottom + 8 * dp, 2, WHITE);
        break;
      }
      case 'switch': {
        const trackH = h / 2;
        c.fillRoundRect(b.left, b.top + (h - trackH) / 2, w, trackH, trackH / 2, p.on ? [0x8a, 0xb4, 0xf8] : [0xbd, 0xc1, 0xc6]);
        const r = Math.round(h / 2.4);
        c.fillCircle(Math.round(p.on ? b.right - r : b.left + r), Math.round(b.top + h / 2), r, p.on ? ACCENT : [0xf1, 0xf3, 0xf4]);
        break;
      }
    }
  }
  for (const child of n.children) paintNode(c, child, dp);
}

function statusBar(c: Canvas, device: Device, now: Date, height: number, dark: boolean): void {
  c.fillRect(0, 0, c.width, height, dark ? [0x1b, 0x26, 0x3b] : [0x00, 0x00, 0x00]);
  const scale = 2;
  const y = Math.round((height - textHeight(scale)) / 2);
  c.text(clock(now), 16, y, scale, WHITE);
  const pct = `${device.battery}%`;
  const tw = textWidth(pct, scale);
  const batteryW = 14 * scale;
  const bx = c.width - 16 - tw - batteryW - 8;
  c.fillRect(bx, y, batteryW, textHeight(scale), [0x9e, 0x9e, 0x9e]);
  c.fillRect(bx, y, Math.round((batteryW * device.battery) / 100), textHeight(scale), WHITE);
  c.text(pct, c.width - 16 - tw, y, scale, WHITE);
}

/**
 * Everything render() draws from, as one string: two equal keys give the same picture. A screen that comes back
 * (Back after a tap, as a test suite does every few commands) is then encoded once, not again at every return.
 */
export function renderKey(device: Device, root: UiNode | undefined, now: Date): string {
  const { width, height } = device.logicalSize;
  const tap = device.lastTap ? `${device.lastTap.x},${device.lastTap.y}` : '';
  const state = `${width}x${height}@${device.options.density} ${clock(now)} ${device.battery}% ${device.locked || device.shade} ${tap}`;
  return root ? `${state}\n${JSON.stringify(root)}\n${JSON.stringify(imeWindow(device) ?? null)}` : state;
}

/**
 * Rasterizes the window the way SurfaceFlinger would composite it: app window, status bar, pointer trace. `reuse` is
 * a canvas no one looks at any more, drawn over when its size fits.
 */
export function render(device: Device, root: UiNode | undefined, now: Date, reuse?: Canvas): Canvas {
  const { width, height } = device.logicalSize;
  let canvas: Canvas;
  if (reuse?.fits(width, height)) {
    canvas = reuse;
    canvas.fill(BLACK);
  } else canvas = new Canvas(width, height, BLACK);
  if (!root) return canvas;
  const dp = device.options.density / 160;
  paintNode(canvas, root, dp);
  const ime = imeWindow(device);
  if (ime) paintNode(canvas, ime, dp);
  statusBar(canvas, device, now, Math.round(24 * dp), device.locked || device.shade);
  if (device.lastTap) canvas.ring(device.lastTap.x, device.lastTap.y, Math.round(14 * dp), Math.round(3 * dp), TAP_MARK);
  return canvas;
}
