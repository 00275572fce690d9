/**
 * live-screen. Target: with minicap, a viewer of GET /sessions/{id}/devices/{serial}/screen (a WebSocket) receives at
 * least 0.9x the frames per second the phone's own minicap delivers, alone and as one of four viewers at once. The
 * baseline is measured in the same run: minicap started by hand on the same phone with the same projection, read
 * through `adb forward` by a plain TCP client, as minicap's README does it.
 *
 * screenshot-during-feed. GET .../screenshot while a viewer watches (the engine answers from the feed's latest frame)
 * against a cold `adb exec-out screencap -p`.
 *
 * The phone is simulated, in its own process, on a private adb server, with its Clock's stopwatch in front, so that
 * the screen changes on every refresh (minicap sends only changed frames). Its minicap encodes with libjpeg-turbo
 * (sharp), as a real phone's does, so it keeps up with a real display's rate: live-screen runs the phone at 30 and at
 * 60 refreshes a second, and reports the CPU the engine spends per viewer at each. (Its screencap is far faster than
 * a real phone's.) H.264 against JPEG compares the engine's CPU per viewer, and sets each codec's cost per picture
 * beside a bare relay's per message in the same run: the floor that a wake, a read and a WebSocket message make. A
 * third turn sends minicap's JPEG at the phone's own size, five times the bytes a frame: what a picture's bytes add.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { launchChromium } from '../test/e2e/support/browser.js';
import { startNetnsProvider } from '../test/support/provider/index.js';
import { clickToFrame, settingsIcon } from './gui-tap-latency.js';
import { allocateUntilInUse, startAndroidLab, type AndroidLab } from './support/android-lab.js';
import { cleanup, onCleanup } from './support/cleanup.js';
import { cpuMs, startChild } from './support/processes.js';
import { detail, fmtMs, fmtRatio, median, percentile, type Benchmark, type Figure } from './support/report.js';
import { call, OWNER, PROVIDER_ADD_TIMEOUT_MS, REQUEST_TIMEOUT_MS, ROOT } from './support/servers.js';
import { readAll } from '../src/main/engine/fleet/android/adb.js';
import { AccessUnitAssembler, NalSplitter } from '../src/main/engine/fleet/android/annex-b.js';
import { streamClient } from '../src/main/engine/fleet/android/tunnel-client.js';
import { SshConnection } from '../src/main/engine/fleet/macos/ssh.js';
import { DEFAULT_BIT_RATE, FLUSH_MS } from '../src/main/engine/fleet/android/h264-feed.js';
import { KEYFRAME_FLAG } from '../src/shared/api/live-screen.js';
import { BENCH_BROWSER, BENCH_SCREEN, countingWindow, sized, SMOKE } from './support/smoke.js';

const WINDOW_MS = sized(5000, 300);
const WARMUP_MS = sized(1000, 100);
const TARGET_RATIO = 0.9;
/** A Pixel 7-sized display, as in the screenshot benchmark (a smoke run's is smaller; the viewers see 360x800 either way). */
const PHONE = { model: 'Bench Pixel', ...BENCH_SCREEN };
/** Real phones' display rates: minicap sends a frame per refresh while the screen changes. */
const RATES = sized([30, 60], [30]);
/** The longest side the viewers ask for: about what a 1440x900 window shows a phone at. */
const MAX_SIZE = 800;
const PROJECTION = `${PHONE.width}x${PHONE.height}@360x800/0`;
/** The JPEG quality the engine asks minicap for. */
const QUALITY = 80;
const APK = fileURLToPath(new URL('../node_modules/@devicefarmer/minicap-prebuilt/prebuilt/noarch/minicap.apk', import.meta.url));
const SCREENSHOT_SAMPLES = sized(30, 1);
const STILL_SAMPLES = sized(10, 1);
/** Untimed samples before each series of screenshots. */
const WARMUP_SAMPLES = sized(3, 0);
/** The published median of `adb exec-out screencap -p` on a real 1440x3120 phone, for scale. */
const REAL_PHONE_SCREENCAP = '2.1 s';

const fmtFps = (fps: number) => `${fps.toFixed(1)} frames/s`;
/** CPU ms per wall second, as a share of one core. */
const fmtCpu = (msPerS: number) => `${(msPerS / 10).toFixed(2)}% of a core`;

async function adb(lab: AndroidLab, ...args: string[]): Promise<string> {
  const r = await lab.adb.run(['-s', lab.serial, ...args], { timeoutMs: REQUEST_TIMEOUT_MS });
  if (r.code !== 0) throw new Error(`adb ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout.toString();
}

/** The Clock's stopwatch in front: a screen that changes on every refresh. */
async function animate(lab: AndroidLab): Promise<void> {
  await adb(lab, 'shell', 'input keyevent KEYCODE_WAKEUP; wm dismiss-keyguard; am start -n com.android.deskclock/.DeskClock');
}

/** minicap run by hand (minicap.apk, the build for this SDK 33 phone) and read through adb forward: the phone's own rate. */
async function directFps(lab: AndroidLab): Promise<number> {
  await adb(lab, 'push', APK, '/data/local/tmp/minicap-bench.apk');
  const running = lab.adb.run(['-s', lab.serial, 'shell', `CLASSPATH=/data/local/tmp/minicap-bench.apk exec app_process /system/bin io.devicefarmer.minicap.Main -n minicap_bench -P ${PROJECTION} -Q ${QUALITY}`]);
  const port = Number((await adb(lab, 'forward', 'tcp:0', 'localabstract:minicap_bench')).trim());
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        return await countFrames(port);
      } catch (error) {
        if (attempt >= 20) throw error;
        await sleep(100);
      }
    }
  } finally {
    const pid = (await adb(lab, 'shell', 'pidof app_process')).trim();
    if (pid) await adb(lab, 'shell', `kill ${pid}`);
    await running;
    await adb(lab, 'forward', '--remove', `tcp:${port}`);
    await adb(lab, 'shell', 'rm -f /data/local/tmp/minicap-bench.apk');
  }
}

/** Frames per second a plain TCP client reads off minicap's socket over the window, after a warm-up. */
function countFrames(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let buffered = Buffer.alloc(0);
    let banner = false;
    let frames = 0;
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (!banner && buffered.length >= 24) {
        banner = true;
        buffered = buffered.subarray(24);
        setTimeout(() => {
          const from = { frames, at: performance.now() };
          void countingWindow(WINDOW_MS, () => frames > from.frames).then(() => {
            socket.destroy();
            resolve((frames - from.frames) / ((performance.now() - from.at) / 1000));
          });
        }, WARMUP_MS);
      }
      while (banner && buffered.length >= 4 && buffered.length >= 4 + buffered.readUInt32LE(0)) {
        buffered = buffered.subarray(4 + buffered.readUInt32LE(0));
        frames++;
      }
    });
    socket.on('error', reject);
    socket.on('close', () => banner || reject(new Error('minicap closed the socket before its banner')));
  });
}

/**
 * Frames per second each of `viewers` WebSockets receives over the window, after a warm-up; the hello they got; and
 * the CPU the engine process (`enginePid`) used over the window, in ms per second.
 */
async function viewerFps(url: string, viewers: number, enginePid: number): Promise<{ fps: number[]; hello: string; cpuMsPerS: number; bytesPerS: number[] }> {
  const sockets = Array.from({ length: viewers }, () => new WebSocket(url));
  const counts = sockets.map(() => 0);
  const bytes = sockets.map(() => 0);
  let hello = '';
  onCleanup(() => sockets.forEach((s) => s.terminate()));
  // The window starts once every viewer has its first frame, and a warm-up after it: the feed starts minicap for its
  // first viewer, which takes a second or more on a busy machine, and that start is not the rate.
  await Promise.all(
    sockets.map((socket, i) => new Promise<void>((resolve, reject) => {
      socket.on('message', (data: Buffer, binary) => {
        if (binary) bytes[i]! += data.length;
        if (binary && counts[i]!++ === 0) resolve();
        else if (!binary) hello = data.toString();
      });
      socket.once('error', reject);
    })),
  );
  await sleep(WARMUP_MS);
  const before = [...counts];
  const bytesBefore = [...bytes];
  const cpuBefore = cpuMs(enginePid);
  const start = performance.now();
  await countingWindow(WINDOW_MS, () => counts.every((n, i) => n > before[i]!));
  const seconds = (performance.now() - start) / 1000;
  const cpuMsPerS = (cpuMs(enginePid) - cpuBefore) / seconds;
  const fps = counts.map((n, i) => (n - before[i]!) / seconds);
  const bytesPerS = bytes.map((n, i) => (n - bytesBefore[i]!) / seconds);
  await Promise.all(sockets.map((s) => new Promise((resolve) => {
    s.once('close', resolve);
    s.close();
  })));
  return { fps, hello, cpuMsPerS, bytesPerS };
}

/**
 * The engine's CPU over a window with the phone's screen moving and nobody watching, in ms per second: its own timers
 * and checks, which every viewer figure includes and which is no viewer's cost.
 */
async function idleCpuMsPerS(pid: number): Promise<number> {
  const before = cpuMs(pid);
  const start = performance.now();
  await sleep(WINDOW_MS);
  return (cpuMs(pid) - before) / ((performance.now() - start) / 1000);
}

async function startLab(prefix: string, refreshRate = 60, engine: NodeJS.ProcessEnv = {}): Promise<{ lab: AndroidLab; sessionId: string; screenUrl: string; screenshotUrl: string }> {
  const lab = await startAndroidLab(prefix, { ...PHONE, refreshRate }, engine);
  const { id: sessionId } = await call<{ id: string }>('POST', `${lab.engine.api}/sessions`, { bearer: lab.apiKey });
  await allocateUntilInUse(lab, sessionId, REQUEST_TIMEOUT_MS);
  const device = `${lab.engine.api}/sessions/${sessionId}/devices/${encodeURIComponent(lab.serial)}`;
  return { lab, sessionId, screenUrl: `${device.replace(/^http/, 'ws')}/screen?token=${lab.apiKey}&maxSize=${MAX_SIZE}`, screenshotUrl: `${device}/screenshot` };
}

/**
 * What one more event-loop wake costs a Node process on this machine: a process alone, woken H264_RATE times a second
 * by a timer, with and without a second timer FLUSH_MS after each wake, in rounds. The H.264 path woke the engine
 * once more per picture than JPEG's (the pause that tells a picture has ended: screenrecord marks no end), and on a
 * virtual machine a wake costs a large share of what relaying a frame does. A picture that arrives whole from the
 * lab's own adb server now goes out without it (fleet/android/h264-feed.ts): the per-picture figure is set beside the
 * wake to show that it is gone. Microseconds of CPU per picture.
 */
// Its own process, reading its own schedstat as cpuMs (support/processes.ts) does: nothing else runs in it.
const WAKE_SCRIPT = `
const { readFileSync, readdirSync } = require('node:fs');
const cpu = () => readdirSync('/proc/self/task').reduce((s, t) => s + Number(readFileSync('/proc/self/task/' + t + '/schedstat', 'utf8').split(' ')[0]), 0) / 1e3;
const [ms, rate, flush, rounds] = process.argv.slice(1).map(Number);
const run = (extra) => new Promise((done) => {
  let frames = 0;
  const start = cpu();
  const end = Date.now() + ms;
  const frame = () => {
    frames++;
    if (extra) setTimeout(() => undefined, flush);
    if (Date.now() < end) setTimeout(frame, 1000 / rate);
    else done((cpu() - start) / frames);
  };
  frame();
});
(async () => {
  const extra = [];
  for (let i = 0; i < rounds; i++) extra.push((await run(true)) - (await run(false)));
  extra.sort((a, b) => a - b);
  console.log(JSON.stringify(extra[Math.floor(extra.length / 2)]));
})();
`;
const WAKE_WINDOW_MS = sized(2000, 300);
async function extraWakeUs(): Promise<number> {
  const child = spawn(process.execPath, ['-e', WAKE_SCRIPT, String(WAKE_WINDOW_MS), String(H264_RATE), String(FLUSH_MS), String(ROUNDS)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  if (code !== 0) throw new Error(`the wake measurement exited with ${code}`);
  return Number(JSON.parse(out));
}

const BARE_RELAY_SCRIPT = fileURLToPath(new URL('./support/bare-relay.mjs', import.meta.url));
/** Windows of the bare relay at each codec's message size, taking turns, after the CPU rounds. */
const RELAY_ROUNDS = sized(6, 1);

/**
 * The floor under the engine's CPU per picture: what the bare relay (support/bare-relay.mjs, a Node process that
 * reads one socket and sends each read as a WebSocket message) spends on each message, fed messages of each size
 * in `sizes` H264_RATE times a second to one viewer, taking turns RELAY_ROUNDS times. Medians in microseconds, by
 * size. A relayed picture costs the engine a wake, a read and a message whatever its codec: on a virtual machine the
 * wake is most of it, and no codec can cost much less than this.
 */
async function bareRelayUs(sizes: number[]): Promise<number[]> {
  const relay = startChild(process.execPath, [BARE_RELAY_SCRIPT], { cwd: ROOT, env: process.env });
  const [, feedPort, viewerPort] = await relay.waitForOutput(/Bare relay: feed (\d+), viewers (\d+)/, REQUEST_TIMEOUT_MS);
  const viewer = new WebSocket(`ws://127.0.0.1:${viewerPort}`);
  const feed = connect(Number(feedPort), '127.0.0.1').setNoDelay(true);
  onCleanup(() => {
    viewer.terminate();
    feed.destroy();
  });
  let received = 0;
  viewer.on('message', () => received++);
  // once() rejects on an 'error' first: a relay that cannot be reached fails the benchmark with its reason.
  await Promise.all([once(viewer, 'open'), once(feed, 'connect')]);
  const perMessage = sizes.map(() => [] as number[]);
  for (let round = 0; round < RELAY_ROUNDS; round++) {
    for (const i of round % 2 === 0 ? sizes.keys() : [...sizes.keys()].reverse()) {
      const message = Buffer.alloc(sizes[i]!, 0x5a);
      const timer = setInterval(() => feed.write(message), 1000 / H264_RATE);
      await sleep(WARMUP_MS);
      const before = { cpu: cpuMs(relay.pid), received };
      const start = performance.now();
      await sleep(WINDOW_MS);
      const messages = received - before.received;
      const used = cpuMs(relay.pid) - before.cpu;
      clearInterval(timer);
      const expected = ((performance.now() - start) / 1000) * H264_RATE;
      // A relay that passed on too few messages measured something else than the engine's rate.
      if (messages < expected * 0.8) throw new Error(`the bare relay passed on ${messages} messages of ${sizes[i]} bytes in the window, not about ${expected.toFixed(0)}`);
      const us = (used * 1000) / messages;
      perMessage[i]!.push(us);
      detail(`bare relay, round ${round + 1}: ${sizes[i]} bytes a message, ${H264_RATE} a second: ${us.toFixed(0)} us per message`);
    }
  }
  viewer.close();
  feed.destroy();
  await relay.stop();
  return perMessage.map(median);
}

/** The size the engine asks screenrecord for at MAX_SIZE: the same picture minicap sends. */
const H264_SIZE = '360x800';
/** H.264 against minicap's JPEG at this display rate, in the same run, on the same moving screen, at the same size. */
const H264_RATE = 30;
const BYTES_TARGET = 0.15;
const GAP_TARGET_MS = 300;
const FIRST_PICTURE_TARGET_MS = 1000;
/** screenrecord's time limit for the restart-gap measurement (180 s on a phone): restarts every few seconds. */
const H264_TIME_LIMIT_S = sized(3, 2);
/** Time limits the restart-gap viewer watches for. */
const H264_RESTARTS = sized(3, 1);
const FIRST_PICTURE_SAMPLES = sized(5, 1);
/**
 * A smoke run's one lab at H264_RATE, with the restart measurement's time limit and the provider link's check period:
 * the measuring run starts an engine and phone for each.
 */
const SMOKE_LAB_ENV = { BENCHTOP_SCREENRECORD_TIME_LIMIT: String(H264_TIME_LIMIT_S), BENCHTOP_PROVIDER_CHECK_MS: '2000' };
const fmtKBps = (bytesPerS: number) => `${(bytesPerS / 1024).toFixed(1)} KiB/s`;

/**
 * Access units per second the phone's own screenrecord writes (adb exec-out, as a person would run it), after its
 * first one and a warm-up: screenrecord's own start is not its rate.
 */
async function directH264Fps(lab: AndroidLab): Promise<number> {
  const adb = spawn('adb', ['-P', String(lab.adb.port), '-s', lab.serial, 'exec-out', `screenrecord --output-format=h264 --size ${H264_SIZE} --bit-rate ${DEFAULT_BIT_RATE} -`], { env: lab.adb.env, stdio: ['ignore', 'pipe', 'ignore'] });
  onCleanup(() => {
    adb.kill();
  });
  const nals = new NalSplitter();
  const assembler = new AccessUnitAssembler();
  let units = 0;
  await new Promise<void>((resolve, reject) => {
    adb.stdout.on('data', (chunk: Buffer) => {
      for (const nal of nals.push(chunk)) if (assembler.push(nal)) units++;
      if (units > 0) resolve();
    });
    adb.once('error', reject);
    adb.once('exit', (code) => reject(new Error(`screenrecord ended (${code}) before its first picture`)));
  });
  await sleep(WARMUP_MS * 2);
  const before = units;
  const start = performance.now();
  await countingWindow(WINDOW_MS, () => units > before);
  adb.kill();
  return (units - before) / ((performance.now() - start) / 1000);
}

/**
 * Each H.264 message's arrival and keyframe flag, for `ms`, to one viewer; a smoke run's shorter window runs on until
 * it has seen a restart (a keyframe after the first picture) and a picture between keyframes.
 */
async function h264Arrivals(url: string, ms: number): Promise<Array<{ at: number; keyframe: boolean }>> {
  const socket = new WebSocket(url);
  onCleanup(() => socket.terminate());
  const arrivals: Array<{ at: number; keyframe: boolean }> = [];
  socket.on('message', (data: Buffer, binary) => {
    if (binary) arrivals.push({ at: performance.now(), keyframe: (data[0]! & KEYFRAME_FLAG) !== 0 });
  });
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  await countingWindow(ms, () => arrivals.slice(1).some((a) => a.keyframe) && arrivals.slice(1).some((a) => !a.keyframe));
  socket.close();
  return arrivals;
}

/** A new viewer's time from its socket opening to its first picture (the feed already running for another viewer). */
async function firstPictureMs(url: string): Promise<number> {
  const socket = new WebSocket(url);
  onCleanup(() => socket.terminate());
  let opened = 0;
  const ms = await new Promise<number>((resolve, reject) => {
    socket.once('open', () => (opened = performance.now()));
    socket.on('message', (_data, binary) => {
      if (binary) resolve(performance.now() - opened);
    });
    socket.once('error', reject);
  });
  socket.close();
  return ms;
}

/** Direct, one viewer and four viewers take turns this many times at each rate: a busy machine's drift falls on all. */
const ROUNDS = sized(3, 1);

/**
 * Rounds of the CPU comparison: H.264 and JPEG to one viewer, taking turns on the same lab, each round's order the
 * other way round. Three rounds, H.264's after JPEG's, gave ratios from 1.03x to 1.26x across runs; six gave 0.96x
 * and 1.15x in two runs of one session (a round's figure moves by a fifth either way: a core's 0.6-0.8 % is the
 * engine's timers and collections as much as the viewer).
 */
const CPU_ROUNDS = sized(12, 1);

/**
 * H.264 (screenrecord through the engine, `codecs=h264`) against minicap's JPEG on the same lab, taking turns:
 * bytes and frames per second to one viewer, engine CPU, then a new viewer's first picture, and the restart gap at a
 * short time limit on a second engine.
 */
async function h264Rows(benchmark: string, lab: AndroidLab, jpegUrl: string, pid: number): Promise<Figure[]> {
  const url = `${jpegUrl}&codecs=h264,jpeg`;
  const direct: number[] = [];
  for (let round = 0; round < ROUNDS; round++) direct.push(await directH264Fps(lab));
  // One and four H.264 viewers, as minicap's rounds ran before: H.264's path as warm as JPEG's when their CPU is
  // compared. V8 optimizes what runs often, and the first H.264 windows after minicap's rounds cost the engine a fifth
  // more than later ones (1.14x of JPEG without these windows, 1.00x and 1.02x with them, measured apart).
  const fourH264: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    await viewerFps(url, 1, pid);
    const many = await viewerFps(url, 4, pid);
    fourH264.push(Math.min(...many.fps));
    detail(`H.264 ${H264_RATE} Hz, round ${round + 1}: four viewers ${many.fps.map((f) => f.toFixed(1)).join(', ')} frames/s (engine ${fmtCpu(many.cpuMsPerS)})`);
  }
  // Each codec's engine CPU over the engine with nobody watching, measured just before in the same round; per
  // picture (or frame), the engine's CPU over the window by what it sent, as the minicap figures count it.
  // A third turn, minicap's JPEG at the phone's own size (five times the bytes a frame): what a picture's bytes add.
  // It goes last in every round: H.264 and JPEG take turns as before (each first in half the rounds, after the idle
  // window), and what the third turn leaves behind (its minicap's stop, its collections) falls in the next round's
  // idle window rather than in one codec's. Placed before them, it put H.264 after a JPEG turn in every round and
  // JPEG in half (1.06x and 1.12x in two runs, where two-turn rounds had given 0.97x-1.06x; last, 1.03x).
  const samples = () => ({ fps: [] as number[], bytes: [] as number[], cpu: [] as number[], perFrame: [] as number[], addsPerFrame: [] as number[] });
  const turns = { h264: samples(), jpeg: samples(), full: samples() };
  const urls = { h264: url, jpeg: jpegUrl, full: jpegUrl.replace(`maxSize=${MAX_SIZE}`, `maxSize=${Math.max(PHONE.width, PHONE.height)}`) };
  const label = { h264: 'H.264', jpeg: 'JPEG', full: 'JPEG at the phone\'s size' };
  for (let round = 0; round < CPU_ROUNDS; round++) {
    const idle = await idleCpuMsPerS(pid);
    for (const codec of round % 2 === 0 ? (['jpeg', 'h264', 'full'] as const) : (['h264', 'jpeg', 'full'] as const)) {
      const alone = await viewerFps(urls[codec], 1, pid);
      if (codec === 'h264' && !alone.hello.includes('"format":"h264"')) throw new Error(`the live screen did not send H.264: ${alone.hello}`);
      // The third turn measures bigger frames only if they came at the phone's own size.
      if (codec === 'full' && !alone.hello.includes(`"frameHeight":${PHONE.height}`)) throw new Error(`the live screen did not send the phone's own size: ${alone.hello}`);
      const t = turns[codec];
      t.fps.push(alone.fps[0]!);
      t.bytes.push(alone.bytesPerS[0]!);
      t.cpu.push(alone.cpuMsPerS - idle);
      t.perFrame.push(alone.cpuMsPerS / alone.fps[0]!);
      t.addsPerFrame.push((alone.cpuMsPerS - idle) / alone.fps[0]!);
      detail(`H.264 against JPEG, ${H264_RATE} Hz, round ${round + 1}, ${label[codec]}: one viewer ${fmtFps(alone.fps[0]!)}, ${fmtKBps(alone.bytesPerS[0]!)} (engine ${fmtCpu(alone.cpuMsPerS)}, ${fmtCpu(idle)} of it with nobody watching)`);
    }
  }
  detail(`H.264 ${H264_RATE} Hz: the phone's screenrecord read directly ${direct.map((f) => fmtFps(f)).join(', ')}`);
  const [fps, bytes, cpu, perPicture] = [turns.h264.fps, turns.h264.bytes, turns.h264.cpu, turns.h264.perFrame];
  const jpeg = { bytesPerS: median(turns.jpeg.bytes), cpuMsPerS: median(turns.jpeg.cpu), cpuMsPerFrame: median(turns.jpeg.perFrame) };
  // Each codec's message as the viewer got it: its bytes a second over its frames a second.
  const messageBytes = [median(bytes) / median(fps), jpeg.bytesPerS / median(turns.jpeg.fps)].map(Math.round);
  const [relayH264, relayJpeg] = await bareRelayUs(messageBytes);
  const adds = { h264: median(turns.h264.addsPerFrame) * 1000, jpeg: median(turns.jpeg.addsPerFrame) * 1000, full: median(turns.full.addsPerFrame) * 1000 };
  const fullBytes = Math.round(median(turns.full.bytes) / median(turns.full.fps));
  detail(`engine CPU per picture one viewer adds: H.264 ${adds.h264.toFixed(0)} us (${messageBytes[0]} bytes), JPEG ${adds.jpeg.toFixed(0)} us (${messageBytes[1]} bytes); the bare relay at those sizes ${relayH264!.toFixed(0)} us and ${relayJpeg!.toFixed(0)} us`);
  // A new viewer while another watches: the feed's cached keyframe and the pictures since.
  const watcher = new WebSocket(url);
  onCleanup(() => watcher.terminate());
  await new Promise((resolve) => watcher.once('message', resolve));
  await sleep(WARMUP_MS * 2);
  const first: number[] = [];
  for (let i = 0; i < FIRST_PICTURE_SAMPLES; i++) {
    first.push(await firstPictureMs(url));
    await sleep(sized(700, 0));
  }
  watcher.close();
  detail(`H.264: a new viewer's first picture: ${first.map((ms) => fmtMs(ms)).join(', ')}`);

  // The restart at the time limit, on a second engine whose screenrecord stops every few seconds. A smoke run's lab
  // was started with that limit already (SMOKE_LAB_ENV): one engine and phone fewer to start.
  let restartUrl = url;
  if (!SMOKE) {
    const short = await startAndroidLab('benchtop-bench-h264-restart-', { ...PHONE, refreshRate: H264_RATE }, { BENCHTOP_SCREENRECORD_TIME_LIMIT: String(H264_TIME_LIMIT_S) });
    const { id: sessionId } = await call<{ id: string }>('POST', `${short.engine.api}/sessions`, { bearer: short.apiKey });
    await allocateUntilInUse(short, sessionId, REQUEST_TIMEOUT_MS);
    await animate(short);
    restartUrl = `${short.engine.api.replace(/^http/, 'ws')}/sessions/${sessionId}/devices/${encodeURIComponent(short.serial)}/screen?token=${short.apiKey}&maxSize=${MAX_SIZE}&codecs=h264`;
  }
  const arrivals = await h264Arrivals(restartUrl, (H264_TIME_LIMIT_S * H264_RESTARTS + 1) * 1000);
  const gaps = arrivals.slice(1).map((a, i) => ({ ms: a.at - arrivals[i]!.at, keyframe: a.keyframe }));
  const restartGaps = gaps.filter((g) => g.keyframe).map((g) => g.ms);
  const usual = median(gaps.filter((g) => !g.keyframe).map((g) => g.ms));
  detail(`H.264 restarts every ${H264_TIME_LIMIT_S} s: gaps before each new keyframe ${restartGaps.map((ms) => fmtMs(ms)).join(', ')}; the usual gap between pictures ${fmtMs(usual)}`);
  if (restartGaps.length === 0) throw new Error('no restart seen');

  const row = (figure: string, value: string, baseline: string, ratio: string, target: string, met: boolean): Figure => ({ benchmark, figure, value, baseline, ratio, target, met });
  const worstGap = Math.max(...restartGaps);
  const overJpeg = (median(perPicture) - jpeg.cpuMsPerFrame) * 1000;
  const wake = await extraWakeUs();
  detail(`H.264: engine CPU per picture ${(median(perPicture) * 1000).toFixed(0)} us against JPEG's ${(jpeg.cpuMsPerFrame * 1000).toFixed(0)} us per frame; one more event-loop wake costs a Node process alone ${wake.toFixed(0)} us here`);
  return [
    row(`H.264 ${H264_RATE} Hz: bytes/s to one viewer (median of ${CPU_ROUNDS})`, fmtKBps(median(bytes)), `${fmtKBps(jpeg.bytesPerS)} (minicap's JPEG, same screen and size)`, fmtRatio(median(bytes), jpeg.bytesPerS), `<= ${BYTES_TARGET}x`, median(bytes) / jpeg.bytesPerS <= BYTES_TARGET),
    row(`H.264 ${H264_RATE} Hz: frames/s to one viewer (median of ${CPU_ROUNDS})`, fmtFps(median(fps)), `${fmtFps(median(direct))} (the phone's screenrecord read directly)`, fmtRatio(median(fps), median(direct)), `>= ${TARGET_RATIO.toFixed(2)}x`, median(fps) / median(direct) >= TARGET_RATIO),
    row(`H.264 ${H264_RATE} Hz: frames/s to each of four viewers (slowest, median of ${ROUNDS})`, fmtFps(median(fourH264)), `${fmtFps(median(direct))} (the phone's screenrecord read directly)`, fmtRatio(median(fourH264), median(direct)), `>= ${TARGET_RATIO.toFixed(2)}x`, median(fourH264) / median(direct) >= TARGET_RATIO),
    row(`H.264 ${H264_RATE} Hz: engine CPU one viewer adds (over the engine with nobody watching; median of ${CPU_ROUNDS})`, fmtCpu(median(cpu)), `${fmtCpu(jpeg.cpuMsPerS)} (minicap's JPEG to one viewer, the same way, taking turns)`, fmtRatio(median(cpu), jpeg.cpuMsPerS), '<= 1.00x', median(cpu) <= jpeg.cpuMsPerS),
    row(`H.264 ${H264_RATE} Hz: engine CPU per picture one viewer adds (median of ${CPU_ROUNDS})`, `${adds.h264.toFixed(0)} us`, `${relayH264!.toFixed(0)} us (a bare relay: one socket read sent as a WebSocket message of H.264's ${messageBytes[0]} bytes, ${H264_RATE} a second; median of ${RELAY_ROUNDS})`, fmtRatio(adds.h264, relayH264!), 'reported', true),
    row(`minicap's JPEG ${H264_RATE} Hz: engine CPU per frame one viewer adds (median of ${CPU_ROUNDS})`, `${adds.jpeg.toFixed(0)} us`, `${relayJpeg!.toFixed(0)} us (the bare relay with JPEG's ${messageBytes[1]} bytes a message; median of ${RELAY_ROUNDS})`, fmtRatio(adds.jpeg, relayJpeg!), 'reported', true),
    row(`minicap's JPEG ${H264_RATE} Hz at the phone's own size: engine CPU per frame one viewer adds (median of ${CPU_ROUNDS})`, `${adds.full.toFixed(0)} us (${fullBytes} bytes a frame)`, `${adds.jpeg.toFixed(0)} us (JPEG at ${MAX_SIZE}, ${messageBytes[1]} bytes a frame, taking turns)`, fmtRatio(adds.full, adds.jpeg), 'reported', true),
    row(`H.264 ${H264_RATE} Hz: engine CPU per picture over JPEG's per frame (medians of ${CPU_ROUNDS}, taking turns)`, `${overJpeg.toFixed(0)} us`, `${wake.toFixed(0)} us (one more event-loop wake, the pause that ended every picture before: a Node process alone, ${H264_RATE} Hz)`, fmtRatio(overJpeg, wake), 'reported', true),
    row(`H.264: restart gap at the time limit (worst of ${restartGaps.length})`, fmtMs(worstGap), `${fmtMs(usual)} (the usual gap between pictures)`, fmtRatio(worstGap, usual), `<= ${GAP_TARGET_MS} ms`, worstGap <= GAP_TARGET_MS),
    row(`H.264: a new viewer's first picture (median of ${FIRST_PICTURE_SAMPLES})`, fmtMs(median(first)), `${FIRST_PICTURE_TARGET_MS} ms`, fmtRatio(median(first), FIRST_PICTURE_TARGET_MS), `<= ${FIRST_PICTURE_TARGET_MS} ms`, Math.max(...first) <= FIRST_PICTURE_TARGET_MS),
  ];
}

/**
 * Clicks per codec and round on the phone page; the codecs take turns, ROUNDS times, so drift falls on both. 30 per
 * codec in all: medians of 15 moved from 0.78x to 1.34x between runs (a click's frame takes 50-170 ms).
 */
const PAGE_TAPS = sized(10, 1);
const LATENCY_TARGET = 1.1;
const LINK_PHONES = sized(4, 1);

/**
 * The phone page in Chromium at 1440x900, on the same lab: frames/s the page shows against the frames the engine relays
 * from the phone to a fast WebSocket viewer in the same window (the moving screen), then click-to-frame on a still
 * screen, H.264 and JPEG taking turns through the page's own codec switch.
 */
async function pageRows(benchmark: string, lab: AndroidLab, sessionId: string): Promise<Figure[]> {
  const api = lab.engine.api;
  const device = `${api}/sessions/${sessionId}/devices/${encodeURIComponent(lab.serial)}`;
  const { token } = await call<{ token: string }>('POST', `${api}/auth/login`, { body: OWNER });
  const browser = await launchChromium(BENCH_BROWSER);
  onCleanup(() => browser.close());
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  await context.addInitScript((t) => sessionStorage.setItem('benchtop.token', t), token);
  const page = await context.newPage();
  await page.goto(`${api.replace(/\/api\/v1$/, '')}/sessions/${sessionId}`);
  // H.264 is drawn to a canvas, JPEG to an image: the one showing is the codec's, once the switch has taken effect.
  const screenOf = (codec: 'H.264' | 'JPEG') => page.locator(codec === 'H.264' ? '.screen canvas:not([hidden])' : '.screen img:not([hidden])');
  let screen = screenOf('H.264');
  const frames = async () => Number(await screen.getAttribute('data-frames'));
  const choose = async (codec: 'H.264' | 'JPEG') => {
    await page.getByRole('group', { name: 'Screen codec' }).getByRole('button', { name: codec }).click();
    await page.locator('.source-badge').filter({ hasText: codec === 'H.264' ? /^screenrecord · H\.264/ : /^minicap · JPEG/ }).waitFor({ timeout: REQUEST_TIMEOUT_MS });
    screen = screenOf(codec);
    await screen.waitFor({ timeout: REQUEST_TIMEOUT_MS });
    for (const deadline = performance.now() + REQUEST_TIMEOUT_MS; (await frames()) < 1; await sleep(50)) {
      if (performance.now() > deadline) throw new Error(`the page showed no ${codec} frame`);
    }
  };
  // The page asks for frames as tall as its window: the fast viewer asks for the same, so that both share one feed.
  const maxSize = await page.evaluate(() => Math.ceil(window.innerHeight * window.devicePixelRatio));
  const socketUrl = (h264: boolean) => `${device.replace(/^http/, 'ws')}/screen?token=${lab.apiKey}&maxSize=${maxSize}${h264 ? '&codecs=h264' : ''}`;

  const rates: Record<'H.264' | 'JPEG', Array<{ page: number; sent: number }>> = { 'H.264': [], JPEG: [] };
  await animate(lab);
  for (let round = 0; round < ROUNDS; round++) {
    for (const codec of ['H.264', 'JPEG'] as const) {
      await choose(codec);
      const viewer = new WebSocket(socketUrl(codec === 'H.264'));
      onCleanup(() => viewer.terminate());
      let sent = 0;
      viewer.on('message', (_data, binary) => void (binary && sent++));
      await new Promise((resolve, reject) => viewer.once('open', resolve).once('error', reject));
      await sleep(WARMUP_MS);
      const [shown0, sent0, t0] = [await frames(), sent, performance.now()];
      await countingWindow(WINDOW_MS, async () => sent > sent0 && (await frames()) > shown0);
      const [shown1, sent1, t1] = [await frames(), sent, performance.now()];
      viewer.close();
      const seconds = (t1 - t0) / 1000;
      rates[codec].push({ page: (shown1 - shown0) / seconds, sent: (sent1 - sent0) / seconds });
      detail(`page, round ${round + 1}, ${codec}: shows ${fmtFps(rates[codec].at(-1)!.page)}; the engine relays ${fmtFps(rates[codec].at(-1)!.sent)} to a fast viewer`);
    }
  }

  const home = () => call('POST', `${device}/actions`, { bearer: lab.apiKey, body: { type: 'pressButton', button: 'HOME' } });
  await home();
  const target = await settingsIcon(device, lab.apiKey);
  const latency: Record<'H.264' | 'JPEG', number[]> = { 'H.264': [], JPEG: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const codec of round % 2 === 0 ? (['H.264', 'JPEG'] as const) : (['JPEG', 'H.264'] as const)) {
      await choose(codec);
      const { pageMs } = await clickToFrame(page, screen, target, home, PAGE_TAPS, PHONE);
      latency[codec].push(...pageMs);
    }
  }
  await context.close();
  for (const codec of ['H.264', 'JPEG'] as const) detail(`page, ${codec}: click to the tap's frame ${latency[codec].map((ms) => fmtMs(ms)).join(', ')}`);

  const h264Page = median(rates['H.264'].map((r) => r.page));
  const h264Sent = median(rates['H.264'].map((r) => r.sent));
  const [h264Click, jpegClick] = [median(latency['H.264']), median(latency.JPEG)];
  return [
    { benchmark, figure: `H.264 ${H264_RATE} Hz: frames/s the phone page shows (median of ${ROUNDS})`, value: fmtFps(h264Page), baseline: `${fmtFps(h264Sent)} (relayed from the phone to a fast viewer, same window; JPEG: page ${fmtFps(median(rates.JPEG.map((r) => r.page)))} of ${fmtFps(median(rates.JPEG.map((r) => r.sent)))})`, ratio: fmtRatio(h264Page, h264Sent), target: `>= ${TARGET_RATIO.toFixed(2)}x`, met: h264Page / h264Sent >= TARGET_RATIO },
    { benchmark, figure: `H.264: click to the tap's frame on the phone page (median of ${latency['H.264'].length})`, value: fmtMs(h264Click), baseline: `${fmtMs(jpegClick)} (minicap's JPEG on the same page, taking turns)`, ratio: fmtRatio(h264Click, jpegClick), target: `<= ${LATENCY_TARGET}x`, met: h264Click / jpegClick <= LATENCY_TARGET },
  ];
}

/** The bytes the hub's end of a provider's link has received and sent so far (the veth pair's counters). */
function linkBytes(hubLink: string): { received: number; sent: number } {
  const read = (what: string) => Number(readFileSync(`/sys/class/net/${hubLink}/statistics/${what}`, 'utf8'));
  return { received: read('rx_bytes'), sent: read('tx_bytes') };
}

/**
 * A provider (its own network namespace, reached over SSH) with four phones, each with its stopwatch running and one
 * viewer on the hub: the link's bytes per second both ways while they stream H.264, against the same with minicap's
 * JPEG, taking turns.
 */
async function providerLinkRows(benchmark: string, hub?: AndroidLab): Promise<Figure[]> {
  const lab = hub ?? await startAndroidLab('benchtop-bench-screen-link-', { ...PHONE, model: 'Local Bench', refreshRate: H264_RATE }, { BENCHTOP_PROVIDER_CHECK_MS: '2000' });
  const api = lab.engine.api;
  const { token } = await call<{ token: string }>('POST', `${api}/auth/login`, { body: OWNER });
  const started = startNetnsProvider(0, { phones: Array.from({ length: LINK_PHONES }, (_, i) => ({ port: 21101 + i, options: { ...PHONE, model: `Link Bench ${i}`, refreshRate: H264_RATE } })) });
  onCleanup(async () => (await started.catch(() => undefined))?.stop());
  const provider = await started;
  const added = await call<{ health: string; healthMessage?: string }>('POST', `${api}/lab/providers`, { bearer: token, body: provider.body({ name: 'bench-screen-link' }), timeoutMs: PROVIDER_ADD_TIMEOUT_MS });
  if (added.health !== 'up') throw new Error(`the provider is ${added.health}: ${added.healthMessage}`);
  const { id: sessionId } = await call<{ id: string }>('POST', `${api}/sessions`, { bearer: lab.apiKey });
  const devices: string[] = [];
  for (let i = 0; i < LINK_PHONES; i++) {
    const filters = [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }, { attribute: 'name', operator: 'EQUALS', value: `Link Bench ${i}` }];
    for (const deadline = performance.now() + REQUEST_TIMEOUT_MS; ; await sleep(200)) {
      const { data } = await call<{ data: Array<{ name: string; state: string }> }>('GET', `${api}/fleet/devices`, { bearer: lab.apiKey });
      if (data.some((d) => d.name === `Link Bench ${i}` && d.state === 'device')) break;
      if (performance.now() > deadline) throw new Error(`Link Bench ${i} did not join the fleet`);
    }
    const a = await call<{ id: string }>('POST', `${api}/sessions/${sessionId}/devices`, { bearer: lab.apiKey, body: { filters } });
    for (const deadline = performance.now() + REQUEST_TIMEOUT_MS; ; await sleep(100)) {
      const d = await call<{ status: string; info: { serial?: string } }>('GET', `${api}/sessions/${sessionId}/devices/${a.id}`, { bearer: lab.apiKey });
      if (d.status === 'in_use') {
        devices.push(`${api}/sessions/${sessionId}/devices/${encodeURIComponent(d.info.serial!)}`);
        break;
      }
      if (performance.now() > deadline) throw new Error(`Link Bench ${i} was not in_use: ${d.status}`);
    }
  }
  // The stopwatch on each, through the provider's own adb server over SSH (as the providers bench reaches it), before
  // anything is counted.
  const ssh = await SshConnection.connect({ host: provider.address, port: 22, username: 'root', privateKey: provider.privateKey }, { timeoutMs: 5000 });
  onCleanup(() => ssh.close());
  const viaProvider = streamClient(() => ssh.forwardOut('127.0.0.1', 5037));
  for (const serial of provider.serials) {
    const out = (await readAll(await viaProvider.getDevice(serial).shell('input keyevent KEYCODE_WAKEUP; wm dismiss-keyguard; am start -n com.android.deskclock/.DeskClock'))).toString();
    if (!/Starting/.test(out)) throw new Error(`the stopwatch did not start on ${serial}: ${out}`);
  }
  ssh.close();

  const windowOf = async (h264: boolean) => {
    const viewers = devices.map((device) => new WebSocket(`${device.replace(/^http/, 'ws')}/screen?token=${lab.apiKey}&maxSize=${MAX_SIZE}${h264 ? '&codecs=h264' : ''}`));
    onCleanup(() => viewers.forEach((v) => v.terminate()));
    const hellos: string[] = [];
    await Promise.all(viewers.map((v) => new Promise<void>((resolve, reject) => {
      v.on('message', (data: Buffer, binary) => (binary ? resolve() : hellos.push(data.toString())));
      v.once('error', reject);
    })));
    if (h264 && !hellos.every((h) => h.includes('"format":"h264"'))) throw new Error(`a provider's phone did not send H.264: ${hellos.join(' ')}`);
    await sleep(WARMUP_MS * 2);
    const before = linkBytes(provider.hubLink);
    const start = performance.now();
    await countingWindow(WINDOW_MS, () => linkBytes(provider.hubLink).received > before.received);
    const after = linkBytes(provider.hubLink);
    const seconds = (performance.now() - start) / 1000;
    await Promise.all(viewers.map((v) => new Promise((resolve) => (v.once('close', resolve), v.close()))));
    // The feeds stop with their last viewer: the next window starts from a quiet link.
    await sleep(WARMUP_MS * 2);
    return { in: (after.received - before.received) / seconds, out: (after.sent - before.sent) / seconds };
  };
  const h264: Array<{ in: number; out: number }> = [];
  const jpeg: Array<{ in: number; out: number }> = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const codec of round % 2 === 0 ? [true, false] : [false, true]) {
      const w = await windowOf(codec);
      (codec ? h264 : jpeg).push(w);
      detail(`provider link, ${LINK_PHONES} phones, round ${round + 1}, ${codec ? 'H.264' : 'JPEG'}: provider to hub ${fmtKBps(w.in)}, hub to provider ${fmtKBps(w.out)}`);
    }
  }
  const [hIn, hOut, jIn, jOut] = [median(h264.map((w) => w.in)), median(h264.map((w) => w.out)), median(jpeg.map((w) => w.in)), median(jpeg.map((w) => w.out))];
  return [
    { benchmark, figure: `H.264 ${H264_RATE} Hz: a provider's link, ${LINK_PHONES} phones streaming, provider to hub (median of ${ROUNDS})`, value: fmtKBps(hIn), baseline: `${fmtKBps(jIn)} (minicap's JPEG, same phones, taking turns)`, ratio: fmtRatio(hIn, jIn), target: `<= ${BYTES_TARGET}x`, met: hIn / jIn <= BYTES_TARGET },
    { benchmark, figure: `H.264 ${H264_RATE} Hz: a provider's link, ${LINK_PHONES} phones streaming, hub to provider (median of ${ROUNDS})`, value: fmtKBps(hOut), baseline: `${fmtKBps(jOut)} (minicap's JPEG: its TCP acknowledgements and adb's)`, ratio: fmtRatio(hOut, jOut), target: 'reported', met: true },
  ];
}

export const liveScreen: Benchmark = {
  name: 'live-screen',
  title: `minicap live screen over a WebSocket (1 and 4 viewers) vs the phone's own minicap read directly, ${PROJECTION}, simulated phone at ${RATES.join(' and ')} frames/s, ${ROUNDS} rounds taking turns; H.264 (screenrecord) against minicap at ${H264_RATE} Hz`,
  async run() {
    const figures: Figure[] = [];
    for (const rate of RATES) {
      const { lab, screenUrl, sessionId } = await startLab('benchtop-bench-screen-', rate, SMOKE ? SMOKE_LAB_ENV : {});
      await animate(lab);
      const pid = lab.engine.child.pid;
      const direct: number[] = [];
      const one: number[] = [];
      const four: number[] = [];
      const cpuOne: number[] = [];
      const cpuFour: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        direct.push(await directFps(lab));
        const alone = await viewerFps(screenUrl, 1, pid);
        if (!alone.hello.includes('"source":"minicap"')) throw new Error(`the live screen did not run minicap: ${alone.hello}`);
        one.push(alone.fps[0]!);
        // Engine CPU ms per frame and viewer: what each frame costs the engine, shared by its viewers.
        cpuOne.push(alone.cpuMsPerS / alone.fps[0]!);
        const many = await viewerFps(screenUrl, 4, pid);
        const slowest = Math.min(...many.fps);
        four.push(slowest);
        cpuFour.push(many.cpuMsPerS / median(many.fps) / 4);
        detail(`${rate} Hz, round ${round + 1}: direct ${fmtFps(direct.at(-1)!)}; one viewer ${fmtFps(alone.fps[0]!)} (engine ${fmtCpu(alone.cpuMsPerS)}); ` +
          `four viewers ${many.fps.map((f) => f.toFixed(1)).join(', ')} frames/s (engine ${fmtCpu(many.cpuMsPerS)})`);
      }
      const spread = (xs: number[]) => `${Math.min(...xs).toFixed(1)} to ${Math.max(...xs).toFixed(1)}`;
      detail(`${rate} Hz: direct ${spread(direct)}, one viewer ${spread(one)}, slowest of four ${spread(four)} frames/s over ${ROUNDS} rounds`);
      detail(`${rate} Hz: engine CPU per frame per viewer: ${cpuOne.map((ms) => ms.toFixed(3)).join(', ')} ms alone; ${cpuFour.map((ms) => ms.toFixed(3)).join(', ')} ms each of four`);

      if (rate === H264_RATE) {
        figures.push(...await h264Rows(this.name, lab, screenUrl, pid));
        figures.push(...await pageRows(this.name, lab, sessionId));
      }

      const d = median(direct);
      const baseline = `${fmtFps(d)} (the phone's minicap at ${rate} Hz, read directly; median of ${ROUNDS})`;
      const figure = (name: string, fps: number): Figure => ({
        benchmark: this.name,
        figure: name,
        value: fmtFps(fps),
        baseline,
        ratio: fmtRatio(fps, d),
        target: `>= ${TARGET_RATIO.toFixed(2)}x`,
        met: fps / d >= TARGET_RATIO,
      });
      figures.push(
        figure(`${rate} Hz: frames/s to one viewer (median of ${ROUNDS})`, median(one)),
        figure(`${rate} Hz: frames/s to each of four viewers (slowest, median of ${ROUNDS})`, median(four)),
        {
          benchmark: this.name,
          figure: `${rate} Hz: engine CPU per frame per viewer, four viewers`,
          value: `${median(cpuFour).toFixed(3)} ms`,
          baseline: `${median(cpuOne).toFixed(3)} ms for one viewer alone`,
          ratio: fmtRatio(median(cpuFour), median(cpuOne)),
          target: 'reported',
          met: true,
        },
      );
      // A smoke run's provider joins this lab (its one rate is H264_RATE): one engine and phone fewer to start.
      if (SMOKE) figures.push(...await providerLinkRows(this.name, lab));
      await cleanup();
    }
    if (!SMOKE) figures.push(...await providerLinkRows(this.name));
    await cleanup();
    return figures;
  },
};

/**
 * GET .../screenshot and a cold `adb exec-out screencap -p` in turns, SCREENSHOT_SAMPLES each after three of warm-up
 * (none in a smoke run):
 * their times, and the content type the API answered with.
 */
async function screenshotsBesideScreencap(lab: AndroidLab, screenshotUrl: string): Promise<{ api: number[]; cold: number[]; type: string }> {
  const api: number[] = [];
  const cold: number[] = [];
  let type = '';
  for (let i = 0; i < SCREENSHOT_SAMPLES + WARMUP_SAMPLES; i++) {
    let start = performance.now();
    const res = await fetch(screenshotUrl, { headers: { authorization: `Bearer ${lab.apiKey}` }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    await res.arrayBuffer();
    const apiMs = performance.now() - start;
    if (res.status !== 200) throw new Error(`GET ${screenshotUrl} answered ${res.status}`);
    type = res.headers.get('content-type') ?? '';
    start = performance.now();
    const png = await lab.adb.run(['-s', lab.serial, 'exec-out', 'screencap -p'], { timeoutMs: REQUEST_TIMEOUT_MS });
    const coldMs = performance.now() - start;
    if (png.code !== 0 || png.stdout.length < 100) throw new Error('adb exec-out screencap -p failed');
    if (i < WARMUP_SAMPLES) continue;
    api.push(apiMs);
    cold.push(coldMs);
  }
  return { api, cold, type };
}

export const screenshotDuringFeed: Benchmark = {
  name: 'screenshot-during-feed',
  title: `GET .../screenshot while a live screen runs vs a cold \`adb exec-out screencap -p\`, ${SCREENSHOT_SAMPLES} each, interleaved`,
  async run() {
    const { lab, screenUrl, screenshotUrl } = await startLab('benchtop-bench-shot-feed-');
    await animate(lab);
    const viewer = new WebSocket(screenUrl);
    onCleanup(() => viewer.terminate());
    await new Promise<void>((resolve, reject) => {
      viewer.once('message', () => resolve());
      viewer.once('error', reject);
    });
    await sleep(WARMUP_MS);
    const { api, cold, type } = await screenshotsBesideScreencap(lab, screenshotUrl);
    viewer.close();
    // The same phone with a still screen: it re-encodes nothing and answers from its cached PNG.
    await adb(lab, 'shell', 'input keyevent KEYCODE_HOME');
    const still: number[] = [];
    for (let i = 0; i < WARMUP_SAMPLES + STILL_SAMPLES; i++) {
      const start = performance.now();
      await lab.adb.run(['-s', lab.serial, 'exec-out', 'screencap -p'], { timeoutMs: REQUEST_TIMEOUT_MS });
      if (i >= WARMUP_SAMPLES) still.push(performance.now() - start);
    }
    if (type !== 'image/jpeg') throw new Error(`the screenshot did not come from the feed: ${type}`);

    // While only an H.264 viewer watches there is no picture that stands alone (the engine relays, never decodes): a
    // screenshot is a capture, as with no viewer at all, and costs what screencap costs on the phone.
    await animate(lab);
    const video = new WebSocket(`${screenUrl}&codecs=h264`);
    onCleanup(() => video.terminate());
    await new Promise<void>((resolve, reject) => {
      video.on('message', (_data, binary) => binary && resolve());
      video.once('error', reject);
    });
    const { api: duringVideo, cold: alone, type: videoType } = await screenshotsBesideScreencap(lab, screenshotUrl);
    video.close();
    detail(`API while only an H.264 viewer watches (${videoType}): median ${fmtMs(median(duringVideo))}; cold screencap beside it ${fmtMs(median(alone))}`);
    detail(`API while a feed runs (${type}): median ${fmtMs(median(api))}, p95 ${fmtMs(percentile(api, 95))}`);
    detail(`cold adb exec-out screencap -p of the simulated phone, a new frame each time: median ${fmtMs(median(cold))}, p95 ${fmtMs(percentile(cold, 95))}`);
    detail(`adb exec-out screencap -p of the simulated phone on a still screen (its PNG cached): median ${fmtMs(median(still))}`);
    detail(`the simulated phone's screencap is far faster than a real phone's: published median ${REAL_PHONE_SCREENCAP} at 1440x3120`);
    return [{
      benchmark: this.name,
      figure: 'GET .../screenshot while a feed runs',
      value: `median ${fmtMs(median(api))} (p95 ${fmtMs(percentile(api, 95))})`,
      baseline: `cold screencap median ${fmtMs(median(cold))} on the simulated phone (a real phone: ${REAL_PHONE_SCREENCAP})`,
      ratio: fmtRatio(median(api), median(cold)),
      target: '<= 1.00x of the simulated cold screencap',
      met: median(api) <= median(cold),
    }, {
      benchmark: this.name,
      figure: 'GET .../screenshot while only an H.264 viewer watches (a capture: PNG)',
      value: `median ${fmtMs(median(duringVideo))} (p95 ${fmtMs(percentile(duringVideo, 95))})`,
      baseline: `cold screencap median ${fmtMs(median(alone))} on the simulated phone (a real phone: ${REAL_PHONE_SCREENCAP})`,
      ratio: fmtRatio(median(duringVideo), median(alone)),
      target: 'reported',
      met: true,
    }];
  },
};
