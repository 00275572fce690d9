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
 * a real phone's.)
 */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { allocateUntilInUse, startAndroidLab, type AndroidLab } from './support/android-lab.js';
import { cleanup, onCleanup } from './support/cleanup.js';
import { cpuMs } from './support/processes.js';
import { detail, fmtMs, fmtRatio, median, percentile, type Benchmark, type Figure } from './support/report.js';
import { call, REQUEST_TIMEOUT_MS } from './support/servers.js';
import { AccessUnitAssembler, NalSplitter } from '../src/main/engine/fleet/android/annex-b.js';
import { DEFAULT_BIT_RATE } from '../src/main/engine/fleet/android/h264-feed.js';
import { KEYFRAME_FLAG } from '../src/shared/api/live-screen.js';

const WINDOW_MS = 5000;
const WARMUP_MS = 1000;
const TARGET_RATIO = 0.9;
/** A Pixel 7-sized display, as in the screenshot benchmark. */
const PHONE = { model: 'Bench Pixel', width: 1080, height: 2400, density: 420 };
/** Real phones' display rates: minicap sends a frame per refresh while the screen changes. */
const RATES = [30, 60];
/** The longest side the viewers ask for: about what a 1440x900 window shows a phone at. */
const MAX_SIZE = 800;
const PROJECTION = `1080x2400@360x800/0`;
/** The JPEG quality the engine asks minicap for. */
const QUALITY = 80;
const APK = fileURLToPath(new URL('../node_modules/@devicefarmer/minicap-prebuilt/prebuilt/noarch/minicap.apk', import.meta.url));
const SCREENSHOT_SAMPLES = 30;
/** The published median of `adb exec-out screencap -p` on a real 1440x3120 phone, for scale. */
const REAL_PHONE_SCREENCAP = '2.1 s';

const fmtFps = (fps: number) => `${fps.toFixed(1)} frames/s`;
/** CPU ms per wall second, as a share of one core. */
const fmtCpu = (msPerS: number) => `${(msPerS / 10).toFixed(1)}% of a core`;

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
    let counting: { frames: number; at: number } | undefined;
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (!banner && buffered.length >= 24) {
        banner = true;
        buffered = buffered.subarray(24);
        setTimeout(() => (counting = { frames, at: performance.now() }), WARMUP_MS);
        setTimeout(() => {
          socket.destroy();
          resolve((frames - counting!.frames) / ((performance.now() - counting!.at) / 1000));
        }, WARMUP_MS + WINDOW_MS);
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
  await sleep(WINDOW_MS);
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

async function startLab(prefix: string, refreshRate = 60): Promise<{ lab: AndroidLab; sessionId: string; screenUrl: string; screenshotUrl: string }> {
  const lab = await startAndroidLab(prefix, { ...PHONE, refreshRate });
  const { id: sessionId } = await call<{ id: string }>('POST', `${lab.engine.api}/sessions`, { bearer: lab.apiKey });
  await allocateUntilInUse(lab, sessionId, REQUEST_TIMEOUT_MS);
  const device = `${lab.engine.api}/sessions/${sessionId}/devices/${encodeURIComponent(lab.serial)}`;
  return { lab, sessionId, screenUrl: `${device.replace(/^http/, 'ws')}/screen?token=${lab.apiKey}&maxSize=${MAX_SIZE}`, screenshotUrl: `${device}/screenshot` };
}

/** The size the engine asks screenrecord for at MAX_SIZE: the same picture minicap sends. */
const H264_SIZE = '360x800';
/** H.264 against minicap's JPEG at this display rate, in the same run, on the same moving screen, at the same size. */
const H264_RATE = 30;
const BYTES_TARGET = 0.15;
const GAP_TARGET_MS = 300;
const FIRST_PICTURE_TARGET_MS = 1000;
/** screenrecord's time limit for the restart-gap measurement (180 s on a phone): restarts every few seconds. */
const H264_TIME_LIMIT_S = 3;
const FIRST_PICTURE_SAMPLES = 5;
const fmtKBps = (bytesPerS: number) => `${(bytesPerS / 1024).toFixed(1)} KiB/s`;

/** Access units per second the phone's own screenrecord writes (adb exec-out, as a person would run it), after a warm-up. */
function directH264Fps(lab: AndroidLab): Promise<number> {
  const adb = spawn('adb', ['-P', String(lab.adb.port), '-s', lab.serial, 'exec-out', `screenrecord --output-format=h264 --size ${H264_SIZE} --bit-rate ${DEFAULT_BIT_RATE} -`], { env: lab.adb.env, stdio: ['ignore', 'pipe', 'ignore'] });
  onCleanup(() => {
    adb.kill();
  });
  const nals = new NalSplitter();
  const assembler = new AccessUnitAssembler();
  let units = 0;
  adb.stdout.on('data', (chunk: Buffer) => {
    for (const nal of nals.push(chunk)) if (assembler.push(nal)) units++;
  });
  return new Promise((resolve, reject) => {
    adb.once('error', reject);
    setTimeout(() => {
      const before = units;
      const start = performance.now();
      setTimeout(() => {
        adb.kill();
        resolve((units - before) / ((performance.now() - start) / 1000));
      }, WINDOW_MS);
    }, WARMUP_MS * 2);
  });
}

/** Each H.264 message's arrival and keyframe flag, for `ms`, to one viewer. */
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
  await sleep(ms);
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
const ROUNDS = 3;

/**
 * H.264 (screenrecord through the engine, `codecs=h264`) against minicap's JPEG measured just before on the same lab:
 * bytes and frames per second to one viewer, engine CPU, then a new viewer's first picture, and the restart gap at a
 * short time limit on a second engine.
 */
async function h264Rows(benchmark: string, lab: AndroidLab, jpegUrl: string, pid: number, jpeg: { fps: number; bytesPerS: number; cpuMsPerFrame: number; cpuMsPerS: number }): Promise<Figure[]> {
  const url = `${jpegUrl}&codecs=h264,jpeg`;
  const direct: number[] = [];
  const fps: number[] = [];
  const bytes: number[] = [];
  const cpu: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    direct.push(await directH264Fps(lab));
    const alone = await viewerFps(url, 1, pid);
    if (!alone.hello.includes('"format":"h264"')) throw new Error(`the live screen did not send H.264: ${alone.hello}`);
    fps.push(alone.fps[0]!);
    bytes.push(alone.bytesPerS[0]!);
    cpu.push(alone.cpuMsPerS);
    detail(`H.264 ${H264_RATE} Hz, round ${round + 1}: the phone's screenrecord ${fmtFps(direct.at(-1)!)}; one viewer ${fmtFps(alone.fps[0]!)}, ${fmtKBps(alone.bytesPerS[0]!)} (engine ${fmtCpu(alone.cpuMsPerS)})`);
  }
  // A new viewer while another watches: the feed's cached keyframe and the pictures since.
  const watcher = new WebSocket(url);
  onCleanup(() => watcher.terminate());
  await new Promise((resolve) => watcher.once('message', resolve));
  await sleep(WARMUP_MS * 2);
  const first: number[] = [];
  for (let i = 0; i < FIRST_PICTURE_SAMPLES; i++) {
    first.push(await firstPictureMs(url));
    await sleep(700);
  }
  watcher.close();
  detail(`H.264: a new viewer's first picture: ${first.map((ms) => fmtMs(ms)).join(', ')}`);

  // The restart at the time limit, on a second engine whose screenrecord stops every few seconds.
  const short = await startAndroidLab('benchtop-bench-h264-restart-', { ...PHONE, refreshRate: H264_RATE }, { BENCHTOP_SCREENRECORD_TIME_LIMIT: String(H264_TIME_LIMIT_S) });
  const { id: sessionId } = await call<{ id: string }>('POST', `${short.engine.api}/sessions`, { bearer: short.apiKey });
  await allocateUntilInUse(short, sessionId, REQUEST_TIMEOUT_MS);
  await animate(short);
  const arrivals = await h264Arrivals(`${short.engine.api.replace(/^http/, 'ws')}/sessions/${sessionId}/devices/${encodeURIComponent(short.serial)}/screen?token=${short.apiKey}&maxSize=${MAX_SIZE}&codecs=h264`, (H264_TIME_LIMIT_S * 3 + 1) * 1000);
  const gaps = arrivals.slice(1).map((a, i) => ({ ms: a.at - arrivals[i]!.at, keyframe: a.keyframe }));
  const restartGaps = gaps.filter((g) => g.keyframe).map((g) => g.ms);
  const usual = median(gaps.filter((g) => !g.keyframe).map((g) => g.ms));
  detail(`H.264 restarts every ${H264_TIME_LIMIT_S} s: gaps before each new keyframe ${restartGaps.map((ms) => fmtMs(ms)).join(', ')}; the usual gap between pictures ${fmtMs(usual)}`);
  if (restartGaps.length === 0) throw new Error('no restart seen');

  const row = (figure: string, value: string, baseline: string, ratio: string, target: string, met: boolean): Figure => ({ benchmark, figure, value, baseline, ratio, target, met });
  const worstGap = Math.max(...restartGaps);
  return [
    row(`H.264 ${H264_RATE} Hz: bytes/s to one viewer (median of ${ROUNDS})`, fmtKBps(median(bytes)), `${fmtKBps(jpeg.bytesPerS)} (minicap's JPEG, same screen and size)`, fmtRatio(median(bytes), jpeg.bytesPerS), `<= ${BYTES_TARGET}x`, median(bytes) / jpeg.bytesPerS <= BYTES_TARGET),
    row(`H.264 ${H264_RATE} Hz: frames/s to one viewer (median of ${ROUNDS})`, fmtFps(median(fps)), `${fmtFps(median(direct))} (the phone's screenrecord read directly)`, fmtRatio(median(fps), median(direct)), `>= ${TARGET_RATIO.toFixed(2)}x`, median(fps) / median(direct) >= TARGET_RATIO),
    row(`H.264 ${H264_RATE} Hz: engine CPU for one viewer`, fmtCpu(median(cpu)), `${fmtCpu(jpeg.cpuMsPerS)} (minicap's JPEG to one viewer)`, fmtRatio(median(cpu), jpeg.cpuMsPerS), '<= 1.00x', median(cpu) <= jpeg.cpuMsPerS),
    row(`H.264: restart gap at the time limit (worst of ${restartGaps.length})`, fmtMs(worstGap), `${fmtMs(usual)} (the usual gap between pictures)`, fmtRatio(worstGap, usual), `<= ${GAP_TARGET_MS} ms`, worstGap <= GAP_TARGET_MS),
    row(`H.264: a new viewer's first picture (median of ${FIRST_PICTURE_SAMPLES})`, fmtMs(median(first)), `${FIRST_PICTURE_TARGET_MS} ms`, fmtRatio(median(first), FIRST_PICTURE_TARGET_MS), `<= ${FIRST_PICTURE_TARGET_MS} ms`, Math.max(...first) <= FIRST_PICTURE_TARGET_MS),
  ];
}

export const liveScreen: Benchmark = {
  name: 'live-screen',
  title: `minicap live screen over a WebSocket (1 and 4 viewers) vs the phone's own minicap read directly, ${PROJECTION}, simulated phone at ${RATES.join(' and ')} frames/s, ${ROUNDS} rounds taking turns; H.264 (screenrecord) against minicap at ${H264_RATE} Hz`,
  async run() {
    const figures: Figure[] = [];
    for (const rate of RATES) {
      const { lab, screenUrl } = await startLab('benchtop-bench-screen-', rate);
      await animate(lab);
      const pid = lab.engine.child.pid;
      const direct: number[] = [];
      const one: number[] = [];
      const four: number[] = [];
      const cpuOne: number[] = [];
      const cpuOneWall: number[] = [];
      const cpuFour: number[] = [];
      const jpegBytes: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        direct.push(await directFps(lab));
        const alone = await viewerFps(screenUrl, 1, pid);
        if (!alone.hello.includes('"source":"minicap"')) throw new Error(`the live screen did not run minicap: ${alone.hello}`);
        one.push(alone.fps[0]!);
        jpegBytes.push(alone.bytesPerS[0]!);
        cpuOneWall.push(alone.cpuMsPerS);
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

      if (rate === H264_RATE) figures.push(...await h264Rows(this.name, lab, screenUrl, pid, { fps: median(one), bytesPerS: median(jpegBytes), cpuMsPerFrame: median(cpuOne), cpuMsPerS: median(cpuOneWall) }));

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
      await cleanup();
    }
    return figures;
  },
};

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
    const api: number[] = [];
    const cold: number[] = [];
    let type = '';
    for (let i = 0; i < SCREENSHOT_SAMPLES + 3; i++) {
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
      if (i < 3) continue;
      api.push(apiMs);
      cold.push(coldMs);
    }
    viewer.close();
    // The same phone with a still screen: it re-encodes nothing and answers from its cached PNG.
    await adb(lab, 'shell', 'input keyevent KEYCODE_HOME');
    const still: number[] = [];
    for (let i = 0; i < 13; i++) {
      const start = performance.now();
      await lab.adb.run(['-s', lab.serial, 'exec-out', 'screencap -p'], { timeoutMs: REQUEST_TIMEOUT_MS });
      if (i >= 3) still.push(performance.now() - start);
    }
    if (type !== 'image/jpeg') throw new Error(`the screenshot did not come from the feed: ${type}`);
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
    }];
  },
};
