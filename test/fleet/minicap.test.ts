import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { decode as decodeJpeg } from 'jpeg-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { jpegSize } from '../../src/main/engine/domain/image-size.js';
import { minicapBuild } from '../../src/main/engine/fleet/android/minicap.js';
import { parseLogcatLine } from '../../src/main/engine/fleet/android/driver.js';
import { client } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';
import { connectWs } from '../support/ws.js';

const hasAdb = adbOrSkip();
const PREBUILT = fileURLToPath(new URL('../../node_modules/@devicefarmer/minicap-prebuilt/prebuilt', import.meta.url));

interface Watcher {
  ws: WebSocket;
  hellos: Array<Record<string, unknown>>;
  frames: Buffer[];
  closed: Promise<number>;
}

function watch(url: string): Promise<Watcher> {
  const { ws, refusal } = connectWs(url);
  const w: Watcher = { ws, hellos: [], frames: [], closed: new Promise((resolve) => ws.on('close', (code) => resolve(code))) };
  ws.on('message', (data: Buffer, binary) => (binary ? w.frames.push(data) : w.hellos.push(JSON.parse(data.toString()))));
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(w));
    ws.on('error', reject);
    void refusal.then((r) => reject(new Error(`refused: ${r.status} ${JSON.stringify(r.body)}`)));
  });
}

async function stop(w: Watcher): Promise<void> {
  w.ws.close();
  await w.closed;
}

/** Reads minicap's socket as a third-party client would: the banner, then `frames` length-prefixed frames. */
function readMinicap(port: number, frames: number): Promise<{ banner: Buffer; frames: Buffer[] }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    let banner: Buffer | undefined;
    const out: Buffer[] = [];
    socket.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      if (!banner && buf.length >= 24) {
        banner = buf.subarray(0, 24);
        buf = buf.subarray(24);
      }
      while (banner && buf.length >= 4 && buf.length >= 4 + buf.readUInt32LE(0)) {
        out.push(buf.subarray(4, 4 + buf.readUInt32LE(0)));
        buf = buf.subarray(4 + buf.readUInt32LE(0));
      }
      if (banner && out.length >= frames) {
        socket.destroy();
        resolve({ banner, frames: out });
      }
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`socket closed after ${out.length} frames`)));
  });
}

const processes = async (lab: TestLab, serial: string) => (await lab.phone(serial).shell('ps -A')).output.toString();

describe.skipIf(!hasAdb)('minicap', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;
  /** Android 11 (SDK 30): the native binary and its minicap.so. */
  let native: { session: string; serial: string; id: string };
  /** Android 13 (SDK 33): minicap.apk through app_process. */
  let apk: { session: string; serial: string; id: string };

  beforeAll(async () => {
    lab = await startLab([
      { model: 'Pixel 3', osVersion: '11', sdk: 30 },
      { model: 'Pixel 7', osVersion: '13', sdk: 33 },
      { model: 'Nexus x86', osVersion: '10', sdk: 29, abi: 'x86' },
    ], { screenMaxFps: 0 });
    c = client(lab.engine.api);
    owner = await c.login();
    native = await allocateInUse(c, owner, 'Pixel 3');
    apk = await allocateInUse(c, owner, 'Pixel 7');
  }, 60_000);
  afterAll(() => lab?.stop());

  const screen = (a: { session: string; serial: string }, query = '') =>
    `${lab.engine.api.replace(/^http/, 'ws')}/sessions/${a.session}/devices/${a.serial}/screen?token=${owner}${query}`;

  describe('on the simulated phone, driven by the adb CLI as minicap\'s README does', () => {
    it('runs only the binary for its ABI with the minicap.so for its SDK', async () => {
      const serial = lab.serials[2]!;
      // adb shell over shell_v2 keeps the phone's stderr apart, as on a real phone: minicap writes its messages there.
      const adb = (...args: string[]) => lab.adb.run(['-s', serial, ...args]).then((r) => r.stdout.toString() + r.stderr);
      const run = 'LD_LIBRARY_PATH=/data/local/tmp /data/local/tmp/minicap -i';
      await adb('push', `${PREBUILT}/arm64-v8a/bin/minicap`, '/data/local/tmp/');
      expect(await adb('shell', run)).toContain('not executable: 64-bit ELF file');
      await adb('push', `${PREBUILT}/x86/bin/minicap`, '/data/local/tmp/');
      expect(await adb('shell', run)).toContain('library "minicap.so" not found');
      await adb('push', `${PREBUILT}/x86/lib/android-28/minicap.so`, '/data/local/tmp/');
      expect(await adb('shell', run)).toContain('cannot locate symbol');
      await adb('push', `${PREBUILT}/x86/lib/android-29/minicap.so`, '/data/local/tmp/');
      expect(JSON.parse((await lab.adb.run(['-s', serial, 'shell', run])).stdout.toString())).toMatchObject({ id: 0, width: 720, height: 1280, rotation: 0 });
      expect(await adb('shell', `CLASSPATH=/data/local/tmp/none.apk app_process /system/bin io.devicefarmer.minicap.Main -i`)).toContain('ClassNotFoundException');
    });

    it('serves the banner, then a JPEG of the screen, on localabstract:minicap through adb forward', async () => {
      const serial = lab.serials[2]!;
      // adb shell over shell_v2 keeps the phone's stderr apart, as on a real phone: minicap writes its messages there.
      const adb = (...args: string[]) => lab.adb.run(['-s', serial, ...args]).then((r) => r.stdout.toString() + r.stderr);
      const running = adb('shell', 'LD_LIBRARY_PATH=/data/local/tmp /data/local/tmp/minicap -P 720x1280@360x640/0');
      const pid = Number(await waitFor('minicap to run', async () => (await lab.adb.run(['-s', serial, 'shell', 'pidof minicap'])).stdout.toString().trim() || undefined));
      const port = Number((await lab.adb.run(['-s', serial, 'forward', 'tcp:0', 'localabstract:minicap'])).stdout.toString().trim());
      const { banner, frames } = await readMinicap(port, 1);
      expect([banner[0], banner[1], banner.readUInt32LE(2)]).toEqual([1, 24, pid]);
      expect([banner.readUInt32LE(6), banner.readUInt32LE(10), banner.readUInt32LE(14), banner.readUInt32LE(18)]).toEqual([720, 1280, 360, 640]);
      expect([banner[22], banner[23]]).toEqual([0, 2]);
      const jpeg = decodeJpeg(frames[0]!);
      expect([jpeg.width, jpeg.height]).toEqual([360, 640]);
      await adb('shell', `kill ${pid}`);
      expect(await running).toContain(`PID: ${pid}`);
      await adb('forward', '--remove', `tcp:${port}`);
    });
  });

  describe('as the engine\'s live screen', () => {
    for (const [label, which] of [['native binary, SDK 30', () => native], ['minicap.apk, SDK 33', () => apk]] as const) {
      it(`sends JPEG frames at the viewer's size, only when the screen changes (${label})`, async () => {
        const a = which();
        const w = await watch(screen(a, '&maxSize=640'));
        await waitFor('a first frame', () => w.frames.length >= 1, 20_000);
        expect(w.hellos[0]).toEqual({ type: 'hello', width: 720, height: 1280, frameWidth: 360, frameHeight: 640, format: 'jpeg', source: 'minicap' });
        expect([decodeJpeg(w.frames[0]!).width, decodeJpeg(w.frames[0]!).height]).toEqual([360, 640]);
        // A still screen sends nothing more: within 10 s, a 400 ms stretch with no frame (a loaded machine may still
        // be drawing what the allocation's preparation did, and the status bar's clock turns once a minute).
        let still = -1;
        for (let deadline = Date.now() + 10_000; still !== w.frames.length && Date.now() < deadline;) {
          still = w.frames.length;
          await sleep(400);
        }
        expect(w.frames.length).toBe(still);
        await c.call('POST', `/sessions/${a.session}/devices/${a.serial}/actions`, { token: owner, body: { type: 'pressButton', button: 'APP_SWITCH' } });
        await waitFor('a frame after the change', () => w.frames.length > still);
        await c.call('POST', `/sessions/${a.session}/devices/${a.serial}/actions`, { token: owner, body: { type: 'pressButton', button: 'HOME' } });
        const pushed = a === native ? ['/data/local/tmp/minicap', '/data/local/tmp/minicap.so'] : ['/data/local/tmp/minicap.apk'];
        for (const path of pushed) expect(lab.phone(a.serial).readFile(path)).toBeDefined();
        await stop(w);
        // The last viewer gone, minicap is stopped on the phone.
        await waitFor('minicap to stop', async () => !/minicap|app_process/.test(await processes(lab, a.serial)));
      });
    }

    it('streams a screen that changes every refresh to four viewers from one minicap process', async () => {
      await lab.phone(apk.serial).shell('am start -n com.android.deskclock/.DeskClock');
      const viewers = await Promise.all([0, 1, 2, 3].map(() => watch(screen(apk, '&maxSize=320'))));
      await waitFor('frames to every viewer', () => viewers.every((v) => v.frames.length >= 2), 20_000);
      const before = viewers.map((v) => v.frames.length);
      await sleep(2000);
      const counts = viewers.map((v, i) => v.frames.length - before[i]!);
      // The stopwatch changes every refresh: each viewer gets a stream of distinct frames, not a still picture.
      for (const n of counts) expect(n).toBeGreaterThan(3);
      expect((await processes(lab, apk.serial)).match(/app_process/g)).toHaveLength(1);
      await Promise.all(viewers.map(stop));
      await lab.phone(apk.serial).shell('input keyevent KEYCODE_HOME');
    });

    it('answers a screenshot from the running feed\'s latest frame, and with a screencap PNG when none runs', async () => {
      const path = `/sessions/${native.session}/devices/${native.serial}/screenshot`;
      const cold = await fetch(`${lab.engine.api}${path}`, { headers: { authorization: `Bearer ${owner}` } });
      expect(cold.headers.get('content-type')).toBe('image/png');
      const w = await watch(screen(native));
      await waitFor('a frame', () => w.frames.length >= 1, 20_000);
      const warm = await fetch(`${lab.engine.api}${path}`, { headers: { authorization: `Bearer ${owner}` } });
      expect(warm.status).toBe(200);
      expect(warm.headers.get('content-type')).toBe('image/jpeg');
      expect(Buffer.from(await warm.arrayBuffer()).equals(w.frames.at(-1)!)).toBe(true);
      await stop(w);
    });

    it('removes what it pushed when the phone is released', async () => {
      const r = await c.call('POST', `/sessions/${native.session}/devices/${native.serial}/release`, { token: owner });
      expect(r.status).toBe(202);
      await waitFor('the pushed files to go', () => lab.phone(native.serial).readFile('/data/local/tmp/minicap') === undefined, 15_000);
      expect(lab.phone(native.serial).readFile('/data/local/tmp/minicap.so')).toBeUndefined();
    });
  });
});

describe.skipIf(!hasAdb)('minicap that cannot capture the display', () => {
  it('falls back to screencap, and the hello says so', async () => {
    const lab = await startLab([{ model: 'Emulator', minicap: false }], { screenMaxFps: 5 });
    try {
      const c = client(lab.engine.api);
      const owner = await c.login();
      const a = await allocateInUse(c, owner, 'Emulator');
      const w = await watch(`${lab.engine.api.replace(/^http/, 'ws')}/sessions/${a.session}/devices/${a.serial}/screen?token=${owner}`);
      await waitFor('a frame', () => w.frames.length >= 1);
      expect(w.hellos[0]).toEqual({ type: 'hello', width: 720, height: 1280, frameWidth: 720, frameHeight: 1280, format: 'png', source: 'screencap' });
      await stop(w);
    } finally {
      await lab.stop();
    }
  }, 30_000);
});

describe('choosing minicap\'s build', () => {
  it('takes the binary and the SDK\'s minicap.so up to SDK 30, minicap.apk from 31, the non-PIE binary before 16, nothing unknown', () => {
    const names = (abi: string, sdk: number) => minicapBuild(abi, sdk)?.files.map((f) => f.local.split('/prebuilt/')[1]);
    expect(names('arm64-v8a', 30)).toEqual(['arm64-v8a/bin/minicap', 'arm64-v8a/lib/android-30/minicap.so']);
    expect(names('x86', 29)).toEqual(['x86/bin/minicap', 'x86/lib/android-29/minicap.so']);
    expect(names('armeabi-v7a', 15)).toEqual(['armeabi-v7a/bin/minicap-nopie', 'armeabi-v7a/lib/android-15/minicap.so']);
    expect(names('arm64-v8a', 33)).toEqual(['noarch/minicap.apk']);
    expect(minicapBuild('arm64-v8a', 33)!.command('-P 1x2@1x2/0')).toBe('CLASSPATH=/data/local/tmp/minicap.apk exec app_process /system/bin io.devicefarmer.minicap.Main -P 1x2@1x2/0');
    expect(minicapBuild('mips', 22)).toBeUndefined();
    expect(minicapBuild('../x86', 22)).toBeUndefined();
  });

  it('reads a JPEG\'s size from its SOF marker, and logcat\'s threadtime lines', () => {
    const jpeg = Buffer.from('ffd8ffe000104a46494600010100000100010000ffc0001108028001680301220002110103110100', 'hex');
    expect(jpegSize(jpeg)).toEqual({ width: 360, height: 640 });
    expect(jpegSize(Buffer.from('not a jpeg'))).toBeUndefined();
    expect(parseLogcatLine('2025-01-15 10:12:13.456  1432  1449 I ActivityTaskManager: START u0 {cmp=a/.B}\r')).toEqual({
      time: '2025-01-15T10:12:13.456Z', level: 'info', tag: 'ActivityTaskManager', pid: 1432, message: 'START u0 {cmp=a/.B}',
    });
    expect(parseLogcatLine('--------- beginning of main')).toBeUndefined();
  });
});
