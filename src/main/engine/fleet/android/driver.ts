import { randomUUID } from 'node:crypto';
import { XMLParser } from 'fast-xml-parser';
import { createInterface } from 'node:readline';
import type { Stats } from 'node:fs';
import type { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { PACKET, PacketReader, shellPacket, windowSize } from '../../../../protocols/adb/shell-v2.js';
import {
  FileMissing,
  type ActionResult, type Button, type DeviceAction, type DeviceInfo, type LiveFrame, type LogLine, type PhoneBaseline, type PhoneDriver, type PhoneFileEntry,
  type PhoneShell, type ScreenRecording, type ShellHandlers, type TerminalSize, type UiElement,
} from '../types.js';
import { addedFiles, LISTING_BOUNDS } from '../../domain/added-files.js';
import { shellQuote as quote } from '../../domain/shell-quote.js';
import { readAll, type Client } from './adb.js';
import { minicapFrames, removeMinicap } from './minicap.js';
import { holdScreenrecord, rotated, screenrecordFrames } from './h264-feed.js';

/** `input keyevent` for each button; SELECT_ALL is Ctrl+A, which needs `input keycombination` (Android 13 and later). */
const KEYCODES: Record<Exclude<Button, 'SELECT_ALL'>, string> = {
  HOME: 'KEYCODE_HOME',
  BACK: 'KEYCODE_BACK',
  ENTER: 'KEYCODE_ENTER',
  VOLUME_UP: 'KEYCODE_VOLUME_UP',
  VOLUME_DOWN: 'KEYCODE_VOLUME_DOWN',
  POWER: 'KEYCODE_POWER',
  APP_SWITCH: 'KEYCODE_APP_SWITCH',
  BACKSPACE: 'KEYCODE_DEL',
  DELETE: 'KEYCODE_FORWARD_DEL',
  TAB: 'KEYCODE_TAB',
  ESCAPE: 'KEYCODE_ESCAPE',
  DPAD_UP: 'KEYCODE_DPAD_UP',
  DPAD_DOWN: 'KEYCODE_DPAD_DOWN',
  DPAD_LEFT: 'KEYCODE_DPAD_LEFT',
  DPAD_RIGHT: 'KEYCODE_DPAD_RIGHT',
  COPY: 'KEYCODE_COPY',
  CUT: 'KEYCODE_CUT',
};
const keyCommand = (button: Button) =>
  button === 'SELECT_ALL' ? 'input keycombination KEYCODE_CTRL_LEFT KEYCODE_A' : `input keyevent ${KEYCODES[button]}`;

/** Lines of backlog a new reader gets before the live ones. */
const LOG_BACKLOG = 1000;
const LEVELS: Record<string, LogLine['level']> = { V: 'verbose', D: 'debug', I: 'info', W: 'warn', E: 'error', F: 'fatal', A: 'fatal' };
/** `logcat -v threadtime -v year -v UTC`: date, time, pid, tid, priority, tag padded to 8, colon, message. */
const THREADTIME = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d\.\d{3})\s+(\d+)\s+(\d+) ([VDIWEFA]) (.*?)\s*: (.*)$/;

/** One logcat line, or undefined for what is not one (the `--------- beginning of` separators). */
export function parseLogcatLine(line: string): LogLine | undefined {
  const m = THREADTIME.exec(line.replace(/\r$/, ''));
  if (!m) return undefined;
  return { time: `${m[1]}T${m[2]}Z`, level: LEVELS[m[5]!]!, tag: m[6]!, pid: Number(m[3]), message: m[7]! };
}


/** `input text` takes printable ASCII only, with %s for a space; anything else goes through the ADBKeyboard IME. */
const INPUT_TEXT_SAFE = /^[\x21-\x7e ]*$/;

export function parsePackages(output: string): string[] {
  return output
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('package:'))
    .map((l) => l.slice('package:'.length))
    .sort();
}

const BOUNDS = /^\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]$/;
const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', isArray: (name) => name === 'node' });

interface XmlNode {
  text?: string;
  'content-desc'?: string;
  'resource-id'?: string;
  class?: string;
  bounds?: string;
  clickable?: string;
  node?: XmlNode[];
}

/** Flattens a uiautomator dump to the elements worth acting on: those with a text, a label, an id, or a tap. */
export function parseUiDump(dump: string): UiElement[] {
  const start = dump.indexOf('<hierarchy');
  const end = dump.lastIndexOf('</hierarchy>');
  if (start < 0 || end < 0) throw new Error(`The phone returned no UI hierarchy: ${dump.slice(0, 200)}`);
  const root = xml.parse(dump.slice(start, end + '</hierarchy>'.length)) as { hierarchy?: { node?: XmlNode[] } };
  const out: UiElement[] = [];
  const walk = (nodes: XmlNode[] | undefined) => {
    for (const n of nodes ?? []) {
      const m = BOUNDS.exec(n.bounds ?? '');
      const element: UiElement = {
        text: String(n.text ?? ''),
        contentDescription: String(n['content-desc'] ?? ''),
        resourceId: String(n['resource-id'] ?? ''),
        className: String(n.class ?? ''),
        bounds: m ? { x: +m[1]!, y: +m[2]!, width: +m[3]! - +m[1]!, height: +m[4]! - +m[2]! } : { x: 0, y: 0, width: 0, height: 0 },
        clickable: n.clickable === 'true',
      };
      if (element.text || element.contentDescription || element.resourceId || element.clickable) out.push(element);
      walk(n.node);
    }
  };
  walk(root.hierarchy?.node);
  return out;
}

/** What `info()` runs, as one shell command: each part's output follows a marker line, so a part may print any number of lines. */
const INFO_PARTS = [
  'getprop ro.product.manufacturer',
  'getprop ro.product.model',
  'getprop ro.build.version.release',
  'getprop ro.build.version.sdk',
  'getprop ro.product.cpu.abi',
  'wm size',
  'wm density',
  'dumpsys battery',
  'settings get global wifi_on',
  'settings get global airplane_mode_on',
] as const;
const INFO_MARKER = '@@benchtop-info@@';
export const INFO_COMMAND = INFO_PARTS.map((part) => `echo ${INFO_MARKER}; ${part}`).join('; ');

/** Reads INFO_COMMAND's output. `wm` prints an "Override" line when the display was resized: that is what shows. */
export function parseDeviceInfo(serial: string, output: string): DeviceInfo {
  const parts = output.split(`${INFO_MARKER}\n`).slice(1).map((p) => p.replace(/\r/g, ''));
  const at = (i: number) => parts[i] ?? '';
  const line = (i: number) => at(i).trim().split('\n')[0]!.trim();
  const int = (text: string | undefined) => (text !== undefined && /^\d+$/.test(text) ? Number(text) : null);
  const flag = (i: number) => (line(i) === '1' ? true : line(i) === '0' ? false : null);
  const size = /Override size:\s*(\d+)x(\d+)/.exec(at(5)) ?? /Physical size:\s*(\d+)x(\d+)/.exec(at(5));
  const density = /Override density:\s*(\d+)/.exec(at(6)) ?? /Physical density:\s*(\d+)/.exec(at(6));
  const battery = at(7);
  const powered = [...battery.matchAll(/(AC|USB|Wireless) powered:\s*(true|false)/g)];
  return {
    serial,
    platform: 'android',
    manufacturer: line(0),
    model: line(1),
    osVersion: line(2),
    sdk: int(line(3)),
    abi: line(4),
    screen: { width: size ? +size[1]! : null, height: size ? +size[2]! : null, density: density ? +density[1]! : null },
    battery: {
      level: int(/^\s*level:\s*(\d+)/m.exec(battery)?.[1]),
      charging: powered.length > 0 ? powered.some((m) => m[2] === 'true') : null,
    },
    network: { wifi: flag(8), airplaneMode: flag(9) },
  };
}

/**
 * What Appium installs on a phone for its WebDriver sessions (the UiAutomator2 server, its instrumentation and
 * Appium's settings app): the lab's own tools, kept across allocations, so that the next session skips the install
 * (seconds on a real phone) when the installed version is the one its driver brings.
 */
export const LAB_KEPT_PACKAGES = new Set(['io.appium.uiautomator2.server', 'io.appium.uiautomator2.server.test', 'io.appium.settings']);

/** Every process with its owner: the apps and what adb's shell started (Android 8 and later; older ps lists its own). */
const PROCESS_LISTING = 'ps -A -o USER,PID,NAME';

/** Where a holder's files land: shared storage (/sdcard is a link to it) and adb's scratch folder. */
const HOLDER_FOLDERS = ['/storage/emulated/0', '/data/local/tmp'];

/** Drives one Android phone through the adb server. Every command is a plain shell command a person could type. */
export class AndroidDriver implements PhoneDriver {
  /** `bulk` carries pushes (installs): on a provider, a connection of their own, so that screens do not stall behind them. */
  constructor(
    private readonly client: Client,
    readonly serial: string,
    private readonly bulk: Client = client,
    /** The adb server's writes arrive as it made them (AndroidFleet says when). */
    private readonly writesIntact = false,
  ) {}

  async shell(command: string, signal?: AbortSignal): Promise<string> {
    signal?.throwIfAborted();
    const stream = await this.client.getDevice(this.serial).shell(command);
    // Closing the stream ends the command on the phone: a cancelled long press lets go at once.
    const stop = () => stream.destroy(new Error('The command was stopped.'));
    signal?.addEventListener('abort', stop, { once: true });
    try {
      return (await readAll(stream)).toString('utf8');
    } finally {
      signal?.removeEventListener('abort', stop);
    }
  }

  async packages(flags = ''): Promise<string[]> {
    return parsePackages(await this.shell(`pm list packages ${flags}`.trim()));
  }

  async prepare(): Promise<PhoneBaseline> {
    // One shell for the four steps, a round trip each before: the log starts with this allocation (the last user's
    // lines are not the next user's to read), and the phone is woken, unlocked and on its home screen.
    await this.shell('logcat -c; input keyevent KEYCODE_WAKEUP; wm dismiss-keyguard; input keyevent KEYCODE_HOME');
    // What is there now, for the release to put back, read at once on three streams: pm starts a Java process on the
    // phone (hundreds of milliseconds on a real one) while find and ps run beside it.
    const [packages, files, listing] = await Promise.all([this.packages(), this.files(), this.shell(PROCESS_LISTING)]);
    const running = await this.processes(packages, listing);
    return {
      packages,
      ...(running ? { processes: { packages: running.packages, shell: running.shell.map((p) => p.pid) } } : {}),
      ...(files ? { files } : {}),
    };
  }

  async cleanup(before: PhoneBaseline): Promise<void> {
    const kept = new Set(before.packages);
    const installed = await this.packages();
    for (const pkg of installed) {
      if (!kept.has(pkg) && !LAB_KEPT_PACKAGES.has(pkg)) await this.shell(`pm uninstall ${quote(pkg)}`);
    }
    // What ran before the allocation (the launcher, the keyboard, the system's own) goes on running; a third-party
    // app that runs is stopped whatever the case, as it always was.
    const thirdParty = await this.packages('-3');
    const now = await this.processes(installed);
    const wasRunning = new Set(before.processes?.packages);
    // A phone whose ps cannot list every process (Android 7 and older) gets every third-party package stopped.
    for (const pkg of now ? now.packages : thirdParty) {
      if (thirdParty.includes(pkg) || (before.processes && !wasRunning.has(pkg))) await this.shell(`am force-stop ${quote(pkg)}`);
    }
    // What the holder left running from adb's shell (a nohup'd loop, a screenrecord) ends; adbd is the lab's way in.
    const shellBefore = new Set(before.processes?.shell);
    const strays = (now?.shell ?? []).filter((p) => before.processes && !shellBefore.has(p.pid) && p.name !== 'adbd' && p.name !== 'ps');
    if (strays.length) await this.shell(`kill -9 ${strays.map((p) => p.pid).join(' ')}`);
    if (before.files) await this.removeAddedFiles(before.files);
    // A build whose clipboard service takes no shell command says so and keeps its clip (docs/sharing.md).
    await this.shell("cmd clipboard set text ''");
    await this.shell('input keyevent KEYCODE_HOME');
    await this.shell('settings put system accelerometer_rotation 0');
    await this.shell('settings put system user_rotation 0');
    await removeMinicap(this.client, this.serial);
  }

  /**
   * Every path under the folders a holder may write, as toybox `find` lists them; undefined when the listing is larger
   * or slower than its bounds, since a partial one cannot tell the lab's files from a holder's.
   */
  private async files(): Promise<string[] | undefined> {
    const listing = await this.shell(
      `find ${HOLDER_FOLDERS.join(' ')} -mindepth 1 2>/dev/null | head -n ${LISTING_BOUNDS.entries + 1}`,
      AbortSignal.timeout(LISTING_BOUNDS.ms),
    ).catch(() => undefined);
    const paths = listing?.split('\n').map((l) => l.replace(/\r$/, '')).filter(Boolean);
    return paths && paths.length <= LISTING_BOUNDS.entries ? paths : undefined;
  }

  /** Removes what was added to the holder's folders since `before`. */
  private async removeAddedFiles(before: readonly string[]): Promise<void> {
    const now = await this.files();
    if (!now) return;
    const outermost = addedFiles(before, now).filter((p) => HOLDER_FOLDERS.some((root) => p.startsWith(`${root}/`)));
    // Batched so that each command stays well inside what adbd takes as one shell line.
    let batch: string[] = [];
    const flush = async () => {
      if (batch.length) await this.shell(`rm -rf ${batch.join(' ')}`);
      batch = [];
    };
    for (const path of outermost) {
      if (batch.join(' ').length + path.length > 3000) await flush();
      batch.push(quote(path));
    }
    await flush();
  }

  /**
   * What runs now, from one `ps`: the installed packages with a process (`ps` names an app's processes `package` or
   * `package:name`), and the processes adb's `shell` user runs; undefined where `ps` cannot list them all.
   */
  private async processes(installed: readonly string[], listing?: string): Promise<{ packages: string[]; shell: Array<{ pid: number; name: string }> } | undefined> {
    const known = new Set(installed);
    const [header, ...rows] = (listing ?? await this.shell(PROCESS_LISTING)).split('\n').map((l) => l.trim().split(/\s+/));
    if (header?.join(' ') !== 'USER PID NAME') return undefined;
    return {
      packages: [...new Set(rows.filter((r) => r.length === 3).map(([, , name]) => name!.split(':')[0]!).filter((n) => known.has(n)))].sort(),
      shell: rows.filter((r) => r.length === 3 && r[0] === 'shell').map(([, pid, name]) => ({ pid: Number(pid), name: name! })),
    };
  }

  /** The allocation's log so far (prepare cleared what came before), then each new line as the phone logs it. */
  async *logs(signal: AbortSignal): AsyncGenerator<LogLine> {
    signal.throwIfAborted();
    const stream = await this.client.getDevice(this.serial).shell(`logcat -v threadtime -v year -v UTC -T ${LOG_BACKLOG}`);
    const lines = createInterface({ input: stream, crlfDelay: Infinity });
    // readline ends its iteration on close(), not when its input is destroyed.
    const stop = () => {
      lines.close();
      stream.destroy();
    };
    stream.once('close', () => lines.close());
    signal.addEventListener('abort', stop, { once: true });
    try {
      for await (const line of lines) {
        const parsed = parseLogcatLine(line);
        if (parsed) yield parsed;
      }
    } catch (error) {
      if (!signal.aborted) throw error;
    } finally {
      signal.removeEventListener('abort', stop);
      stream.destroy();
    }
  }

  liveFrames(signal: AbortSignal, options: { maxSize: number; maxFps: number }): AsyncIterable<LiveFrame> {
    return minicapFrames(this.client, this.serial, options, signal);
  }

  liveVideo(signal: AbortSignal, options: { maxSize: number }): AsyncIterable<LiveFrame> {
    return screenrecordFrames(this.client, this.serial, { ...options, writesIntact: this.writesIntact }, signal);
  }

  holdLiveVideo(): () => void {
    return holdScreenrecord(this.client, this.serial);
  }

  /**
   * Pushes the APK to /data/local/tmp (the one place `pm` may read from on every Android version) and installs it
   * over any earlier version, like `adb install -r`; the pushed copy is removed whatever happens.
   */
  async install(apkPath: string): Promise<void> {
    const remote = `/data/local/tmp/benchtop-${randomUUID()}.apk`;
    const transfer = await this.bulk.getDevice(this.serial).push(apkPath, remote);
    await new Promise<void>((resolve, reject) => {
      transfer.on('end', resolve);
      transfer.on('error', reject);
    });
    try {
      const output = await this.shell(`pm install -r ${quote(remote)}`);
      if (!/^Success/m.test(output)) throw new Error(output.trim().split('\n').pop() || 'pm install printed nothing');
    } finally {
      await this.shell(`rm -f ${quote(remote)}`);
    }
  }

  /**
   * `adb shell` with a PTY, as adb's own client opens it (`shell,v2,TERM=...,pty:`): keystrokes go in as stdin
   * packets, the terminal's size as window-size packets, and the exit packet carries the shell's status.
   */
  async openShell(size: TerminalSize, handlers: ShellHandlers): Promise<PhoneShell> {
    // openLocal sends a service that names its own prefix as it is: here, the shell service with its options.
    const stream = await this.client.getDevice(this.serial).openLocal('shell,v2,TERM=xterm-256color,pty:');
    const reader = new PacketReader();
    let ended = false;
    const end = (status: number | null) => {
      if (ended) return;
      ended = true;
      handlers.exit(status);
    };
    stream.on('data', (chunk: Buffer) => {
      for (const packet of reader.push(chunk)) {
        if (packet.id === PACKET.stdout || packet.id === PACKET.stderr) handlers.output(packet.data);
        else if (packet.id === PACKET.exit) end(packet.data[0] ?? 0);
      }
    });
    stream.on('error', () => undefined);
    stream.on('close', () => end(null));
    const send = (id: number, data: Buffer | string) => {
      if (!stream.destroyed) stream.write(shellPacket(id, data));
    };
    send(PACKET.windowSizeChange, windowSize(size.rows, size.cols));
    return {
      write: (data) => send(PACKET.stdin, data),
      resize: (next) => send(PACKET.windowSizeChange, windowSize(next.rows, next.cols)),
      close: () => stream.destroy(),
    };
  }

  /** adb's sync LIST, as `adb shell ls -la` would show it: a link (such as /sdcard) is listed through. */
  async listFiles(path: string): Promise<PhoneFileEntry[]> {
    const sync = await this.client.getDevice(this.serial).syncService();
    try {
      // LIST of a missing folder is an empty list: STAT tells the two apart (mode 0 is no such file).
      const stat = await sync.stat(path).catch(() => undefined);
      if (!stat || stat.isFile()) throw new FileMissing(`No folder ${path} on the phone.`);
      // adbkit's Entry is an fs.Stats with a name (its typings lose that under ESM).
      const entries = (await sync.readdir(path)) as unknown as Array<Stats & { name: string }>;
      return entries
        .filter((e) => e.name !== '.' && e.name !== '..')
        .map((e) => ({
          name: e.name,
          type: e.isDirectory() ? 'directory' as const : e.isSymbolicLink() ? 'link' as const : 'file' as const,
          size: e.isFile() ? e.size : 0,
          modifiedAt: new Date(e.mtimeMs),
        }));
    } finally {
      sync.end();
    }
  }

  /** adb's sync RECV, as `adb pull`. */
  async readFile(path: string): Promise<Readable> {
    const stat = await this.client.getDevice(this.serial).stat(path).catch(() => undefined);
    if (!stat || !stat.isFile()) throw new FileMissing(`No file ${path} on the phone.`);
    return this.client.getDevice(this.serial).pull(path);
  }

  /** adb's sync SEND, as `adb push`. */
  async writeFile(path: string, content: Readable): Promise<void> {
    const transfer = await this.client.getDevice(this.serial).push(content, path, 0o644);
    await new Promise<void>((resolve, reject) => {
      transfer.on('end', resolve);
      transfer.on('error', reject);
    });
  }

  /** `rm -r` in adb's shell, as `adb shell rm -r` runs it; whatever rm says is the error when the path stays. */
  async deleteFile(path: string): Promise<void> {
    const device = this.client.getDevice(this.serial);
    if (!(await device.stat(path).catch(() => undefined))) throw new FileMissing(`No file or folder ${path} on the phone.`);
    const said = await this.shell(`rm -r ${quote(path)}`);
    if (await device.stat(path).catch(() => undefined)) throw new Error(said.trim() || `rm left ${path} in place`);
  }

  installedApps(): Promise<string[]> {
    return this.packages('-3');
  }

  /**
   * `screenrecord` into adb's scratch folder. Stopping closes its adb stream: adbd hangs the command up, and
   * screenrecord, which catches SIGHUP as it does Ctrl+C, finishes the MP4; the file is then pulled and removed.
   * Another screenrecord may run meanwhile (the live screen's), so the file itself says when it is finished.
   */
  async startRecording(): Promise<ScreenRecording> {
    const remote = `/data/local/tmp/benchtop-${randomUUID()}.mp4`;
    const timeLimitSeconds = 180;
    const stream = await this.client.getDevice(this.serial).shell(`screenrecord --time-limit ${timeLimitSeconds} ${quote(remote)}`);
    stream.on('error', () => undefined);
    stream.resume();
    return {
      timeLimitSeconds,
      // The engine is stopping: screenrecord finishes its file on the phone, and nobody pulls it.
      cancel: () => stream.destroy(),
      stop: async () => {
        stream.destroy();
        const deadline = Date.now() + 15_000;
        const sync = this.client.getDevice(this.serial);
        try {
          // Pulled once its size holds still, and kept once it is a whole MP4 with its index.
          let size = -1;
          for (;;) {
            const stat = await sync.stat(remote).catch(() => undefined);
            if (stat?.isFile() && stat.size === size) {
              const mp4 = await readAll(await sync.pull(remote));
              if (isFinishedMp4(mp4)) return mp4;
            }
            size = stat?.size ?? -1;
            if (Date.now() > deadline) throw new Error('screenrecord did not finish its file.');
            await delay(100);
          }
        } finally {
          await this.shell(`rm -f ${quote(remote)}`).catch(() => undefined);
        }
      },
    };
  }

  async screenshot(): Promise<Buffer> {
    return readAll(await this.client.getDevice(this.serial).screencap());
  }

  async elements(): Promise<UiElement[]> {
    return parseUiDump(await this.shell('uiautomator dump /dev/tty'));
  }

  /** adb's reboot service, as `adb reboot` uses. */
  async reboot(): Promise<void> {
    await this.client.getDevice(this.serial).reboot();
  }

  async info(): Promise<DeviceInfo> {
    return parseDeviceInfo(this.serial, await this.shell(INFO_COMMAND));
  }

  async act(action: DeviceAction, signal?: AbortSignal): Promise<ActionResult> {
    const shell = (command: string) => this.shell(command, signal);
    switch (action.type) {
      case 'tap':
        await shell(`input tap ${action.x} ${action.y}`);
        break;
      case 'doubleTap':
        // Two taps in one shell command: two adb round trips would space them past the double-tap timeout.
        await shell(`input tap ${action.x} ${action.y}; input tap ${action.x} ${action.y}`);
        break;
      case 'longPress':
        await shell(`input swipe ${action.x} ${action.y} ${action.x} ${action.y} ${action.durationMs ?? 800}`);
        break;
      case 'swipe':
        await shell(`input swipe ${action.fromX} ${action.fromY} ${action.toX} ${action.toY} ${action.durationMs ?? 300}`);
        break;
      case 'typeText':
        if (INPUT_TEXT_SAFE.test(action.text)) {
          await shell(`input text ${quote(action.text.replace(/ /g, '%s'))}`);
        } else {
          await shell(`am broadcast -a ADB_INPUT_B64 --es msg ${Buffer.from(action.text).toString('base64')}`);
        }
        break;
      case 'pressButton':
        await shell(keyCommand(action.button));
        break;
      case 'launchApp':
        await shell(`monkey -p ${quote(action.packageName)} -c android.intent.category.LAUNCHER 1`);
        break;
      case 'terminateApp':
        await shell(`am force-stop ${quote(action.packageName)}`);
        break;
      case 'uninstallApp': {
        const output = await shell(`pm uninstall ${quote(action.packageName)}`);
        if (!/^Success/m.test(output)) throw new Error(output.trim().split('\n').pop() || `${action.packageName} is not installed`);
        break;
      }
      case 'clearAppData': {
        const output = await shell(`pm clear ${quote(action.packageName)}`);
        if (!/^Success/m.test(output)) throw new Error(output.trim().split('\n').pop() || `${action.packageName} is not installed`);
        break;
      }
      case 'foregroundApp': {
        // The resumed activity is the app in front: "mResumedActivity: ActivityRecord{... u0 com.pkg/.Main t12}".
        const out = await shell('dumpsys activity activities | grep -m 1 -E "mResumedActivity|topResumedActivity"');
        return { ok: true, packageName: /\s([\w.]+)\/[\w.$]+/.exec(out)?.[1] ?? '' };
      }
      case 'getOrientation': {
        const rotation = Number((await shell('settings get system user_rotation')).trim());
        return { ok: true, orientation: rotation === 1 || rotation === 3 ? 'landscape' : 'portrait' };
      }
      case 'listApps': {
        const out = await shell('cmd package query-activities --brief -a android.intent.action.MAIN -c android.intent.category.LAUNCHER');
        const apps = new Set(out.split('\n').map((l) => l.trim()).filter((l) => /^[\w.]+\//.test(l)).map((l) => l.split('/')[0]!));
        return { ok: true, apps: [...apps].sort() };
      }
      case 'openUrl':
        await shell(`am start -a android.intent.action.VIEW -d ${quote(action.url)}`);
        break;
      case 'setOrientation':
        await shell('settings put system accelerometer_rotation 0');
        await shell(`settings put system user_rotation ${action.orientation === 'landscape' ? 1 : 0}`);
        rotated(this.client, this.serial);
        break;
      case 'screenSize': {
        const m = /(\d+)x(\d+)/.exec(await shell('wm size'));
        if (!m) throw new Error('The phone did not report its screen size.');
        return { ok: true, width: +m[1]!, height: +m[2]! };
      }
    }
    return { ok: true };
  }
}

/**
 * A finished MP4: its top-level boxes run exactly to the end, and one is the index (moov). While MediaMuxer writes,
 * the index is missing (or its space is held by a free box) and mdat is still growing.
 */
function isFinishedMp4(data: Buffer): boolean {
  let moov = false;
  let at = 0;
  while (at + 8 <= data.length) {
    let size = data.readUInt32BE(at);
    // 1: a 64-bit size follows the type; 0: the box runs to the end of the file.
    if (size === 1 && at + 16 <= data.length) size = Number(data.readBigUInt64BE(at + 8));
    else if (size === 0) size = data.length - at;
    if (size < 8) return false;
    if (data.toString('latin1', at + 4, at + 8) === 'moov') moov = true;
    at += size;
  }
  return moov && at === data.length;
}
