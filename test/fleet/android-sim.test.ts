import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Adb from '@devicefarmer/adbkit';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApk, connectToAdb, findAdb, SimulatedPhone, startAdbServer, type AdbServer } from '../../src/sim/android/index.js';

/*
 * The simulated phone against the real adb: a private adb server (its own port, HOME and TMPDIR), `adb connect`,
 * then the adb command line and @devicefarmer/adbkit (the engine's client) talking to the phone through it.
 */

const adbPath = findAdb();
if (!adbPath) {
  if (process.env.CI === 'true') {
    throw new Error('adb is not installed; these tests need the real adb server (install the Debian package `adb`)');
  }
  console.warn('SKIPPED test/fleet/android-sim.test.ts: adb is not installed (install the Debian package `adb`)');
}

interface DumpNode {
  text: string;
  resourceId: string;
  className: string;
  packageName: string;
  contentDesc: string;
  clickable: boolean;
  focused: boolean;
  checked: boolean;
  bounds: [number, number, number, number];
}

function parseDump(xml: string): DumpNode[] {
  const nodes: DumpNode[] = [];
  for (const m of xml.matchAll(/<node ([^>]*?)\s*\/?>/g)) {
    const attrs = Object.fromEntries([...m[1]!.matchAll(/([\w-]+)="([^"]*)"/g)].map((a) => [a[1]!, a[2]!]));
    const b = /\[(\d+),(\d+)\]\[(\d+),(\d+)\]/.exec(attrs.bounds ?? '')!;
    nodes.push({
      text: attrs.text!,
      resourceId: attrs['resource-id']!,
      className: attrs.class!,
      packageName: attrs.package!,
      contentDesc: attrs['content-desc']!,
      clickable: attrs.clickable === 'true',
      focused: attrs.focused === 'true',
      checked: attrs.checked === 'true',
      bounds: [Number(b[1]), Number(b[2]), Number(b[3]), Number(b[4])],
    });
  }
  return nodes;
}

const center = (n: DumpNode) => [Math.round((n.bounds[0] + n.bounds[2]) / 2), Math.round((n.bounds[1] + n.bounds[3]) / 2)] as const;

async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs: number, stepMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

describe.skipIf(!adbPath)('simulated Android phone through the real adb server', () => {
  let server: AdbServer;
  let phone: SimulatedPhone;
  let port: number;
  let serial: string;
  let work: string;

  const adb = (...args: string[]) => server.run(['-s', serial, ...args]);
  const shell = async (command: string) => (await adb('shell', command)).stdout.toString('utf8');
  /** shell_v2 keeps stderr apart and carries the exit status, as on a real phone. */
  const shellFull = async (command: string) => {
    const r = await adb('shell', command);
    return { stdout: r.stdout.toString('utf8'), stderr: r.stderr, code: r.code };
  };
  const dump = async () => {
    const out = (await adb('exec-out', 'uiautomator dump /dev/tty')).stdout.toString('utf8');
    expect(out.endsWith('</hierarchy>UI hierchary dumped to: /dev/tty\n')).toBe(true);
    return parseDump(out);
  };
  const screencap = async () => {
    const png = (await adb('exec-out', 'screencap -p')).stdout;
    return { bytes: png, image: PNG.sync.read(png) };
  };

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'benchtop-sim-test-'));
    server = await startAdbServer({ adbPath });
    phone = new SimulatedPhone({ model: 'Pixel 7 Sim', manufacturer: 'Benchtop', osVersion: '13', sdk: 33, serialNo: 'SIM0001', battery: 77 });
    port = await phone.start();
    serial = await connectToAdb(port, server.port);
  });

  afterAll(async () => {
    await phone?.stop();
    await server?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('connects like a phone: listed with its banner properties and in the device state', async () => {
    expect(serial).toBe(`127.0.0.1:${port}`);
    const list = (await server.run(['devices', '-l'])).stdout.toString('utf8');
    const line = list.split('\n').find((l) => l.startsWith(serial))!;
    expect(line).toMatch(/\sdevice product:benchsim model:Pixel_7_Sim device:benchsim transport_id:\d+$/);
    expect((await adb('get-state')).stdout.toString('utf8').trim()).toBe('device');
    expect(phone.state.connections).toBe(1);
  });

  it('answers getprop for one key and for all, in the `[key]: [value]` format', async () => {
    expect(await shell('getprop ro.product.model')).toBe('Pixel 7 Sim\n');
    expect(await shell('getprop ro.serialno')).toBe('SIM0001\n');
    expect(await shell('getprop no.such.property')).toBe('\n');
    const all = await shell('getprop');
    expect(all).toContain('[ro.build.version.sdk]: [33]\n');
    expect(all).toContain('[ro.build.version.release]: [13]\n');
    expect(all).toContain('[ro.product.manufacturer]: [Benchtop]\n');
    expect(all).toContain('[ro.product.cpu.abi]: [arm64-v8a]\n');
  });

  it('interprets the shell syntax clients send, with toybox messages for unknown commands', async () => {
    expect(await shell('echo a && echo b; false || echo c')).toBe('a\nb\nc\n');
    expect(await shell("echo 'single $HOME' \"double $USER\"")).toBe('single $HOME double shell\n');
    expect(await shell('getprop | grep -E "ro.product.(model|brand)" | head -n 1')).toBe('[ro.product.brand]: [benchtop]\n');
    expect(await shellFull('nosuchcmd')).toEqual({ stdout: '', stderr: '/system/bin/sh: nosuchcmd: inaccessible or not found\n', code: 127 });
    expect(await shell('nosuchcmd 2>/dev/null; echo status=$?')).toBe('status=127\n');
    expect(await shellFull('echo kept > /data/local/tmp/x.txt && cat /data/local/tmp/x.txt; rm /data/local/tmp/x.txt; cat /data/local/tmp/x.txt')).toEqual({
      stdout: 'kept\n',
      stderr: 'cat: /data/local/tmp/x.txt: No such file or directory\n',
      code: 1,
    });
    expect((await shellFull('exit 42')).code).toBe(42);
    // exec: is binary-safe: no PTY, so no CRLF translation of a bare LF byte.
    const raw = (await adb('exec-out', 'printf "a\\nb"')).stdout;
    expect([...raw]).toEqual([0x61, 0x0a, 0x62]);
  });

  it('boots asleep and locked, and wakes and unlocks the way drivers do it', async () => {
    expect(await shell('dumpsys power | grep mWakefulness=')).toBe('  mWakefulness=Asleep\n');
    expect(await adb('exec-out', 'uiautomator dump /dev/tty').then((r) => r.stdout.toString())).toContain('ERROR: null root node');
    await shell('input keyevent KEYCODE_WAKEUP');
    expect(await shell('dumpsys power | grep mWakefulness=')).toBe('  mWakefulness=Awake\n');
    expect(await shell('dumpsys window | grep -o "mShowingLockscreen=[a-z]*"')).toBe('mShowingLockscreen=true\n');
    expect((await dump())[0]!.packageName).toBe('com.android.systemui');
    await shell('wm dismiss-keyguard');
    expect(await shell('dumpsys window | grep -o "mShowingLockscreen=[a-z]*"')).toBe('mShowingLockscreen=false\n');
    expect(await shell('dumpsys battery | grep level')).toBe('  level: 77\n');
    expect(await shell('wm size')).toBe('Physical size: 720x1280\n');
    expect(phone.state.screen).toBe('home');
  });

  it('taps on a dumped element activate it, typed text lands in the focused field, BACK and HOME navigate', async () => {
    const home = await dump();
    const notesIcon = home.find((n) => n.text === 'Notes' && n.clickable)!;
    expect(notesIcon.packageName).toBe('com.android.launcher3');
    const [x, y] = center(notesIcon);
    await shell(`input tap ${x} ${y}`);
    let nodes = await dump();
    const field = nodes.find((n) => n.resourceId === 'com.example.notes:id/note_text')!;
    expect(field).toMatchObject({ className: 'android.widget.EditText', focused: true, text: 'Type a note' });
    expect(await shell('dumpsys window | grep mCurrentFocus')).toContain('com.example.notes/com.example.notes.MainActivity');

    await shell('input text "Hello%sfrom%sadb"');
    const unicode = Buffer.from(' — grüße ✓', 'utf8').toString('base64');
    expect(await shell(`am broadcast -a ADB_INPUT_B64 --es msg ${unicode}`)).toBe(
      'Broadcasting: Intent { act=ADB_INPUT_B64 flg=0x400000 (has extras) }\nBroadcast completed: result=0\n',
    );
    nodes = await dump();
    expect(nodes.find((n) => n.resourceId === 'com.example.notes:id/note_text')!.text).toBe('Hello from adb — grüße ✓');

    await shell('input keyevent 4');
    expect((await dump())[0]!.packageName).toBe('com.android.launcher3');
    const settings = (await dump()).find((n) => n.text === 'Settings' && n.clickable)!;
    await shell(`input tap ${center(settings).join(' ')}`);
    const about = (await dump()).find((n) => n.text === 'About phone')!;
    await shell(`input tap ${about.bounds[0] + 10} ${about.bounds[1] + 10}`);
    const texts = (await dump()).map((n) => n.text);
    expect(texts).toEqual(expect.arrayContaining(['About phone', 'Model', 'Pixel 7 Sim', 'Android version', '13']));
    await shell('input keyevent KEYCODE_HOME');
    expect(phone.state).toMatchObject({ screen: 'home', recents: ['com.android.settings', 'com.example.notes'] });
  });

  it('screencap -p through exec-out is a PNG of the display that changes where it is tapped', async () => {
    const before = await screencap();
    expect(before.bytes.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect([before.image.width, before.image.height]).toEqual([720, 1280]);
    // An empty stretch of wallpaper, away from every icon.
    await shell('input tap 360 1000');
    const after = await screencap();
    expect(after.bytes.equals(before.bytes)).toBe(false);
    const at = (img: PNG, x: number, y: number) => [...img.data.subarray((y * img.width + x) * 4, (y * img.width + x) * 4 + 3)];
    expect(at(after.image, 360 + 26, 1000)).toEqual([0xff, 0x40, 0x81]);
    expect(at(before.image, 360 + 26, 1000)).not.toEqual([0xff, 0x40, 0x81]);
    expect(phone.state.lastTap).toEqual({ x: 360, y: 1000 });
  });

  it('screencap of a screen that comes back is the same picture; the tap mark alone makes a new one', async () => {
    // The status bar's clock is drawn too: a minute that turns between the two pictures of home makes a second try.
    let home = await screencap();
    for (let attempt = 0; attempt < 2; attempt++) {
      await shell('input keyevent KEYCODE_HOME');
      home = await screencap();
      await shell('am start -n com.android.settings/.Settings');
      expect((await screencap()).bytes.equals(home.bytes)).toBe(false);
      await shell('input keyevent KEYCODE_HOME');
      // The same screen again is the same picture (the phone answers it from the PNGs it encoded lately).
      if ((await screencap()).bytes.equals(home.bytes)) break;
      expect(attempt, 'home came back as another picture twice').toBe(0);
    }
    // Everything drawn counts, the last tap's mark included: a tap on empty wallpaper moves only the mark.
    await shell('input tap 300 1000');
    const tapped = await screencap();
    expect(tapped.bytes.equals(home.bytes)).toBe(false);
    expect([...tapped.image.data.subarray((1000 * 720 + 300 + 26) * 4, (1000 * 720 + 300 + 26) * 4 + 3)]).toEqual([0xff, 0x40, 0x81]);
  });

  it('pushes and pulls a 3 MB file byte for byte, across many flow-controlled packets', async () => {
    const data = randomBytes(3 * 1024 * 1024);
    const local = join(work, 'big.bin');
    writeFileSync(local, data);
    const push = await adb('push', local, '/sdcard/Download/big.bin');
    expect(push.stdout.toString()).toContain('1 file pushed');
    expect(phone.readFile('/storage/emulated/0/Download/big.bin')?.equals(data)).toBe(true);
    expect(await shell('ls -l /sdcard/Download | grep big.bin')).toContain(' 3145728 ');
    const back = join(work, 'back.bin');
    const pull = await adb('pull', '/sdcard/Download/big.bin', back);
    expect(pull.stdout.toString()).toContain('1 file pulled');
    expect(readFileSync(back).equals(data)).toBe(true);
    const missing = await adb('pull', '/sdcard/nope.bin', join(work, 'nope.bin'));
    expect(missing.code).not.toBe(0);
    expect(missing.stdout.toString() + missing.stderr).toContain("failed to stat remote object '/sdcard/nope.bin': No such file or directory");
  });

  it('installs an APK with push + pm install, shows it in the launcher, and uninstalls it', async () => {
    const apk = join(work, 'hello.apk');
    writeFileSync(apk, buildApk({ packageName: 'com.example.hello', label: 'Hello', activities: ['.MainActivity', '.Second'] }));
    const install = await adb('install', apk);
    expect(install.stdout.toString()).toMatch(/Performing Push Install[\s\S]*\nSuccess\n$/);
    // adb opens shell v2 streams (shell,v2,<options>:command) since the phone offers shell_v2.
    expect(phone.state.recentServices).toEqual(expect.arrayContaining([expect.stringMatching(/^shell,v2,[^:]*:pm 'install' '\/data\/local\/tmp\/hello\.apk'$/)]));
    expect(phone.readFile('/data/local/tmp/hello.apk')).toBeUndefined();
    expect(await shell('pm list packages -3')).toBe('package:com.example.hello\n');
    expect(await shell('pm path com.example.hello')).toMatch(/^package:\/data\/app\/~~[\w-]+==\/com\.example\.hello-[\w-]+==\/base\.apk\n$/);
    expect(await shell('cmd package query-activities --brief -a android.intent.action.MAIN -c android.intent.category.LAUNCHER -p com.example.hello')).toBe(
      '1 activities found:\n  Activity #0:\n    priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 isDefault=false\n    com.example.hello/.MainActivity\n',
    );
    const icon = (await dump()).find((n) => n.text === 'Hello' && n.clickable)!;
    await shell(`input tap ${center(icon).join(' ')}`);
    expect(phone.state.foregroundPackage).toBe('com.example.hello');
    expect((await dump()).some((n) => n.text === 'Hello from Hello')).toBe(true);
    expect(await shell('am start -n com.example.hello/.Second')).toBe('Starting: Intent { cmp=com.example.hello/.Second }\n');
    expect(phone.state.foregroundActivity).toBe('com.example.hello.Second');

    expect((await adb('uninstall', 'com.example.hello')).stdout.toString()).toBe('Success\n');
    expect(phone.state.foregroundPackage).toBeUndefined();
    expect(await shell('pm list packages -3')).toBe('');
    expect((await adb('uninstall', 'com.example.hello')).stdout.toString()).toBe('Failure [DELETE_FAILED_INTERNAL_ERROR]\n');
  });

  it('rotates the display with settings put system user_rotation', async () => {
    await shell('settings put system accelerometer_rotation 0 && settings put system user_rotation 1');
    expect(await shell('settings get system user_rotation')).toBe('1\n');
    const { image } = await screencap();
    expect([image.width, image.height]).toEqual([1280, 720]);
    expect(await shell('wm size')).toBe('Physical size: 720x1280\n');
    expect((await adb('exec-out', 'uiautomator dump /dev/tty')).stdout.toString()).toContain('<hierarchy rotation="1">');
    await shell('settings put system user_rotation 0');
    expect((await screencap()).image.width).toBe(720);
  });

  it('follows gestures: power off and on, swipe up to unlock, long press for the icon menu', async () => {
    await shell('input keyevent POWER');
    expect(phone.state).toMatchObject({ awake: false, locked: true, screen: 'off' });
    const dark = (await screencap()).image;
    expect(dark.data.subarray(0, 4 * 720 * 100).every((b, i) => i % 4 === 3 || b === 0)).toBe(true);
    await shell('input keyevent 26');
    expect(phone.state.screen).toBe('lockscreen');
    await shell('input swipe 360 1100 360 300 100');
    expect(phone.state.screen).toBe('home');
    const chrome = (await dump()).find((n) => n.text === 'Chrome' && n.clickable)!;
    const [x, y] = center(chrome);
    await shell(`input swipe ${x} ${y} ${x} ${y} 600`);
    expect(phone.state.lastLongPress).toEqual({ x, y });
    const appInfo = (await dump()).find((n) => n.text === 'App info' && n.clickable)!;
    await shell(`input tap ${center(appInfo).join(' ')}`);
    const page = (await dump()).map((n) => n.text);
    expect(page).toEqual(expect.arrayContaining(['App info', 'Chrome', 'com.android.chrome']));
    await shell('input keyevent KEYCODE_HOME');
  });

  it('starts activities by intent, by component and by monkey, and force-stops them', async () => {
    expect(await shell('am start -a android.intent.action.VIEW -d https://example.com/docs')).toBe(
      'Starting: Intent { act=android.intent.action.VIEW dat=https://example.com/... }\n',
    );
    const page = await dump();
    expect(page.find((n) => n.resourceId === 'com.android.chrome:id/url_bar')!.text).toBe('https://example.com/docs');
    expect(page.some((n) => n.className === 'android.webkit.WebView' && n.text === 'example.com')).toBe(true);
    const nope = await shellFull('am start -n com.nope/.Main');
    expect(nope.stdout + nope.stderr).toBe(
      'Starting: Intent { cmp=com.nope/.Main }\nError type 3\nError: Activity class {com.nope/com.nope.Main} does not exist.\n',
    );
    const monkey = await shell('monkey -p com.android.settings -c android.intent.category.LAUNCHER 1');
    expect(monkey).toContain('Events injected: 1\n');
    expect(phone.state.foregroundPackage).toBe('com.android.settings');
    await shell('am force-stop com.android.settings');
    expect(phone.state.screen).toBe('home');
    expect(phone.state.recents).not.toContain('com.android.settings');
    expect(await shell('uiautomator dump')).toBe('UI hierchary dumped to: /sdcard/window_dump.xml\n');
    const pulled = join(work, 'window_dump.xml');
    await adb('pull', '/sdcard/window_dump.xml', pulled);
    expect(readFileSync(pulled, 'utf8')).toMatch(/^<\?xml version='1\.0' encoding='UTF-8' standalone='yes' \?><hierarchy rotation="0"><node index="0" /);
    expect((await shellFull('rm -f /sdcard/window_dump.xml /sdcard/none.xml; ls /sdcard/window_dump.xml')).stderr).toBe(
      'ls: /sdcard/window_dump.xml: No such file or directory\n',
    );
    expect((await adb('root')).stdout.toString()).toBe('adbd cannot run as root in production builds\n');
    // A service this phone does not offer is refused with CLSE, which adb reports as "closed".
    expect((await adb('reverse', '--list')).stderr).toContain('error: closed');
  });

  it('serves @devicefarmer/adbkit, the engine client: properties, shell, sync, screencap, install', async () => {
    const client = Adb.createClient({ port: server.port });
    const device = client.getDevice(serial);
    const props = await device.getProperties();
    expect(props['ro.product.model']).toBe('Pixel 7 Sim');
    expect(await device.waitBootComplete()).toBe(true);
    const out = await Adb.util.readAll(await device.shell('echo hi; getprop ro.build.version.sdk'));
    expect(out.toString()).toBe('hi\n33\n');
    const png = await Adb.util.readAll(await device.screencap());
    expect(PNG.sync.read(png).width).toBe(720);
    const stat = await device.stat('/sdcard/Download/big.bin');
    expect(stat.size).toBe(3 * 1024 * 1024);
    expect((await device.readdir('/sdcard/Download')).map((e: { name: string }) => e.name)).toContain('big.bin');
    const apk = join(work, 'kit.apk');
    writeFileSync(apk, buildApk({ packageName: 'com.example.kit', label: 'Kit' }));
    expect(await device.install(apk)).toBe(true);
    expect(await device.isInstalled('com.example.kit')).toBe(true);
    expect(await device.getPackages('-3')).toEqual(['com.example.kit']);
    expect(await device.uninstall('com.example.kit')).toBe(true);
    expect(await device.isInstalled('com.example.kit')).toBe(false);
  });

  it('unplugging takes it offline; replugging on the same port brings it back with its state', { timeout: 60_000 }, async () => {
    const stateOf = async () => {
      const list = (await server.run(['devices'])).stdout.toString('utf8');
      return list.split('\n').find((l) => l.startsWith(serial + '\t'))?.split('\t')[1] ?? 'absent';
    };
    const tapped = phone.state.lastTap;
    await phone.stop();
    expect(phone.state.listening).toBe(false);
    await eventually(async () => ((await stateOf()) === 'offline' ? true : undefined), 5_000);
    expect((await adb('shell', 'echo hi')).code).not.toBe(0);

    const replugged = Date.now();
    expect(await phone.start(port)).toBe(port);
    // adb 1.0.41 retries a dropped TCP transport by itself (about 250 ms after the drop, then every 10 s, for
    // about a minute before it forgets the device), so no second `adb connect` is needed.
    await eventually(async () => ((await stateOf()) === 'device' ? true : undefined), 25_000, 250);
    const waited = Date.now() - replugged;
    expect(waited).toBeLessThan(25_000);
    expect(await shell('getprop ro.serialno')).toBe('SIM0001\n');
    expect(phone.state.lastTap).toEqual(tapped);
    expect(phone.state.connections).toBe(1);
  });
});

/** A bare-bones ADB host over a socket, independent of the simulator's own framing code. */
class RawHost {
  private buf = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  readonly messages: Array<{ cmd: string; arg0: number; arg1: number; data: Buffer; checksum: number }> = [];
  closed = false;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      while (this.buf.length >= 24) {
        const len = this.buf.readUInt32LE(12);
        if (this.buf.length < 24 + len) break;
        const command = this.buf.readUInt32LE(0);
        expect(this.buf.readUInt32LE(20)).toBe((command ^ 0xffffffff) >>> 0);
        this.messages.push({
          cmd: this.buf.subarray(0, 4).toString('latin1'),
          arg0: this.buf.readUInt32LE(4),
          arg1: this.buf.readUInt32LE(8),
          data: this.buf.subarray(24, 24 + len),
          checksum: this.buf.readUInt32LE(16),
        });
        this.buf = this.buf.subarray(24 + len);
      }
      this.wake();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
  }

  static async open(port: number): Promise<RawHost> {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    return new RawHost(socket);
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  send(cmd: string, arg0: number, arg1: number, data: Buffer | string = Buffer.alloc(0), checksum?: number): void {
    const payload = typeof data === 'string' ? Buffer.from(data) : data;
    const head = Buffer.alloc(24);
    head.write(cmd, 0, 'latin1');
    const command = head.readUInt32LE(0);
    head.writeUInt32LE(arg0, 4);
    head.writeUInt32LE(arg1, 8);
    head.writeUInt32LE(payload.length, 12);
    head.writeUInt32LE(checksum ?? payload.reduce((a, b) => a + b, 0), 16);
    head.writeUInt32LE((command ^ 0xffffffff) >>> 0, 20);
    this.socket.write(Buffer.concat([head, payload]));
  }

  /** Takes the first message matching, waiting up to `ms` for it. */
  async next(match: (m: RawHost['messages'][number]) => boolean, ms = 2000): Promise<RawHost['messages'][number] | undefined> {
    const deadline = Date.now() + ms;
    for (;;) {
      const i = this.messages.findIndex(match);
      if (i >= 0) return this.messages.splice(i, 1)[0];
      const left = deadline - Date.now();
      if (left <= 0 || this.closed) return undefined;
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, left);
      });
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

describe('simulated Android phone at the ADB transport layer', () => {
  let phone: SimulatedPhone;
  let port: number;

  beforeAll(async () => {
    phone = new SimulatedPhone({ model: 'Raw Sim' });
    port = await phone.start();
    // An awake screen encodes to a PNG of several packets at a 4 KiB maxdata.
    await phone.shell('input keyevent WAKEUP');
  });

  afterAll(async () => {
    await phone?.stop();
  });

  it('negotiates the checksummed version and a small maxdata, and keeps one WRTE in flight per stream', async () => {
    const host = await RawHost.open(port);
    const sum = (b: Buffer) => b.reduce((a, x) => a + x, 0);
    host.send('CNXN', 0x01000000, 4096, 'host::features=shell_v2,cmd,stat_v2\0');
    const cnxn = (await host.next((m) => m.cmd === 'CNXN'))!;
    expect(cnxn.arg0).toBe(0x01000000);
    expect(cnxn.checksum).toBe(sum(cnxn.data));
    const banner = cnxn.data.toString();
    expect(banner).toMatch(/^device::ro\.product\.name=benchsim;ro\.product\.model=Raw Sim;ro\.product\.device=benchsim;features=/);
    expect(banner.split('features=')[1]!.split(',')).toEqual(expect.arrayContaining(['shell_v2']));
    expect(banner).not.toMatch(/[=,](cmd|abb|abb_exec)(,|$)/);

    host.send('OPEN', 1, 0, 'exec:screencap -p\0');
    const opened = (await host.next((m) => m.cmd === 'OKAY' && m.arg1 === 1))!;
    const first = (await host.next((m) => m.cmd === 'WRTE' && m.arg1 === 1))!;
    expect(first.arg0).toBe(opened.arg0);
    expect(first.data.length).toBe(4096);
    expect(first.checksum).toBe(sum(first.data));
    // Without our OKAY the phone must not send more on this stream...
    expect(await host.next((m) => m.arg1 === 1, 200)).toBeUndefined();
    // ...while another stream runs to completion beside it.
    host.send('OPEN', 2, 0, 'shell:echo two\0');
    const two = (await host.next((m) => m.cmd === 'OKAY' && m.arg1 === 2))!;
    const twoData = (await host.next((m) => m.cmd === 'WRTE' && m.arg1 === 2))!;
    expect(twoData.data.toString()).toBe('two\n');
    host.send('OKAY', 2, two.arg0);
    expect(await host.next((m) => m.cmd === 'CLSE' && m.arg1 === 2)).toBeDefined();

    const chunks = [first.data];
    host.send('OKAY', 1, opened.arg0);
    for (;;) {
      const m = (await host.next((x) => x.arg1 === 1 && (x.cmd === 'WRTE' || x.cmd === 'CLSE')))!;
      if (m.cmd === 'CLSE') break;
      expect(m.data.length).toBeLessThanOrEqual(4096);
      expect(m.checksum).toBe(sum(m.data));
      chunks.push(m.data);
      host.send('OKAY', 1, opened.arg0);
    }
    // The PNG is larger than one 4096-byte WRTE: the rest came only after each OKAY.
    expect(chunks.length).toBeGreaterThanOrEqual(2);
    expect(PNG.sync.read(Buffer.concat(chunks)).height).toBe(1280);

    host.send('OPEN', 3, 0, 'no-such-service:\0');
    const refused = (await host.next((m) => m.arg1 === 3))!;
    expect([refused.cmd, refused.arg0]).toEqual(['CLSE', 0]);

    // A corrupt payload checksum makes the phone drop the transport, as adbd does.
    host.send('OPEN', 4, 0, 'shell:echo x\0', 12345);
    await host.next(() => false, 500);
    expect(host.closed).toBe(true);
  });
});
