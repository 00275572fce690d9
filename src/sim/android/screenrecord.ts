import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Canvas } from './canvas.js';
import { H264Encoder } from './h264-encoder.js';
import type { MinicapHost } from './minicap.js';
import type { CommandContext, CommandFn } from './shell.js';

/** screenrecord's own limit, and its default: three minutes. */
const MAX_TIME_LIMIT_S = 180;
/** Android 10's default, kDefaultBitRate; Android 9 and older used 4 Mbps. */
const DEFAULT_BIT_RATE = 20_000_000;
const MIN_BIT_RATE = 100_000;
const MAX_BIT_RATE = 200_000_000;
/** What screenrecord asks MediaCodec for (KEY_I_FRAME_INTERVAL): a keyframe every ten seconds. */
const KEYFRAME_INTERVAL_S = 10;
const USAGE = 'Usage: screenrecord [options] <filename>\n\nAndroid screenrecord v1.3.  Records the device\'s display to a .mp4 file.\n';

interface Options {
  timeLimit: number;
  bitRate: number;
  size?: { width: number; height: number };
  format: 'mp4' | 'h264';
  file: string;
}

/** `4000000`, `4M` or `4000K`, as screenrecord's parseValueWithUnit reads a bit rate. */
function parseBitRate(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(text);
  if (!m) return undefined;
  return Math.round(Number(m[1]) * ({ k: 1e3, m: 1e6 }[m[2]!.toLowerCase()] ?? 1));
}

async function parseArgs(ctx: CommandContext): Promise<Options | number> {
  const fail = async (message: string) => (await ctx.stderr.write(message), 2);
  const o: Partial<Options> & Pick<Options, 'timeLimit' | 'bitRate' | 'format'> = { timeLimit: MAX_TIME_LIMIT_S, bitRate: DEFAULT_BIT_RATE, format: 'mp4' };
  const args = [...ctx.args];
  while (args.length > 0) {
    const arg = args.shift()!;
    // getopt_long: `--name value` and `--name=value` alike.
    const [name, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const value = () => inline ?? args.shift() ?? '';
    if (name === '--time-limit') o.timeLimit = Number(value());
    else if (name === '--size') {
      const m = /^(\d+)x(\d+)$/.exec(value());
      if (!m) return fail('Invalid size specified\n');
      o.size = { width: +m[1]!, height: +m[2]! };
    } else if (name === '--bit-rate') {
      const text = value();
      const rate = parseBitRate(text);
      if (rate === undefined) return fail(`Malformed bit rate '${text}'\n`);
      if (rate < MIN_BIT_RATE || rate > MAX_BIT_RATE) return fail(`Bit rate ${rate}bps outside acceptable range [${MIN_BIT_RATE},${MAX_BIT_RATE}]\n`);
      o.bitRate = rate;
    } else if (name === '--output-format') {
      const format = value();
      if (format !== 'mp4' && format !== 'h264') return fail(`Unknown format '${format}'\n`);
      o.format = format;
    } else if (name === '--verbose' || name === '--bugreport' || name === '--rotate') continue;
    else if (name === '--help') return (await ctx.stdout.write(USAGE), 0);
    else if (name.startsWith('-') && name !== '-') return fail(`Unknown option ${name}\n${USAGE}`);
    else o.file = arg;
  }
  if (!Number.isInteger(o.timeLimit) || o.timeLimit < 1 || o.timeLimit > MAX_TIME_LIMIT_S) {
    return fail(`Time limit ${o.timeLimit}s outside acceptable range [1,${MAX_TIME_LIMIT_S}] seconds\n`);
  }
  if (!o.file) return fail('Must specify output file (see --help).\n');
  return o as Options;
}

/**
 * `screenrecord [--time-limit N] [--size WxH] [--bit-rate R] [--output-format mp4|h264] <file>`: the display
 * encoded to H.264 until the time limit, a kill, or the hang-up when its adb stream closes. With
 * `--output-format=h264` and `-` as the file, the raw Annex B stream goes to stdout as it is encoded (what
 * `adb exec-out screenrecord --output-format=h264 -` streams); otherwise an MP4 is written, finished on SIGINT and
 * SIGHUP too (screenrecord catches them, which is how Ctrl+C leaves a playable file) with its index last, as
 * MediaMuxer writes it. As on a phone, a frame is encoded only when the screen changed, keyframes come seconds apart,
 * and the video keeps the size it started with: a rotation is letterboxed into it.
 */
export function screenrecord(host: MinicapHost): CommandFn {
  return async (ctx) => {
    const parsed = await parseArgs(ctx);
    if (typeof parsed === 'number') return parsed;
    const { timeLimit, bitRate, format, file } = parsed;
    const toStdout = format === 'h264' && file === '-';
    const path = ctx.fs.resolve(file, ctx.cwd);
    if (!toStdout && !ctx.fs.isWritable(path)) {
      await ctx.stderr.write(`Unable to open '${file}': Permission denied\n`);
      return 1;
    }
    // screenrecord opens (creates, truncates) its output before recording, so the file is there while it records:
    // Appium waits for it to appear to know the recording started. The video is written into it at the end.
    if (!toStdout) {
      try {
        ctx.fs.writeFile(path, Buffer.alloc(0));
      } catch {
        await ctx.stderr.write(`Unable to open '${file}': No such file or directory\n`);
        return 1;
      }
    }
    const { width, height } = parsed.size ?? host.device.logicalSize;
    if (width % 2 === 1 || height % 2 === 1 || width === 0 || height === 0) {
      await ctx.stderr.write(`ERROR: unable to configure video/avc codec at ${width}x${height} (err=-2147483648)\n`);
      return 1;
    }
    const scratch = toStdout ? undefined : await mkdtemp(join(tmpdir(), 'benchtop-screenrecord-'));
    const encoder = new H264Encoder({
      width, height, bitRate, keyframeIntervalS: KEYFRAME_INTERVAL_S, maxFrameRate: host.device.options.refreshRate,
      format: toStdout ? 'h264' : 'mp4', path: scratch && join(scratch, 'video.mp4'),
    });
    const proc = host.processes.spawn('screenrecord', ctx.signal);
    // Nobody reads the stream any more: stop at once, even mid-frame with ffmpeg's pipes full.
    const hangUp = () => toStdout && encoder.kill();
    ctx.signal.addEventListener('abort', hangUp, { once: true });
    try {
      try {
        await encoder.started();
      } catch (error) {
        await ctx.stderr.write(`ERROR: unable to create video/avc codec instance: ${(error as Error).message}\n`);
        return 1;
      }
      const relay = toStdout ? relayOutput(encoder, ctx) : Promise.resolve();
      // Awaited below; a reader gone early must not surface as an unhandled rejection meanwhile.
      relay.catch(() => undefined);
      const last = await recordFrames(host, encoder, width, height, timeLimit, proc.signal);
      if (proc.signal.reason === 'SIGKILL') {
        encoder.kill();
        await relay.catch(() => undefined);
        return 137;
      }
      if (toStdout && ctx.signal.aborted) {
        encoder.kill();
        await relay.catch(() => undefined);
        return 0;
      }
      // The last picture again at the end, so that the file lasts as long as the recording did.
      if (!toStdout) await encoder.frame(last);
      await Promise.all([encoder.finish(), relay]);
      if (scratch) ctx.fs.writeFile(path, await readFile(join(scratch, 'video.mp4')));
      return 0;
    } catch (error) {
      encoder.kill();
      await ctx.stderr.write(`ERROR: ${(error as Error).message}\n`);
      return 1;
    } finally {
      ctx.signal.removeEventListener('abort', hangUp);
      proc.exit();
      if (scratch) await rm(scratch, { recursive: true, force: true });
    }
  };
}

async function relayOutput(encoder: H264Encoder, ctx: CommandContext): Promise<void> {
  for await (const chunk of encoder.output) await ctx.stdout.write(chunk as Buffer);
}

/**
 * Looks at the screen once per display refresh and encodes a frame only when the picture changed, the first at once;
 * resolves to the last frame when the time limit passes or the process is stopped.
 */
async function recordFrames(host: MinicapHost, encoder: H264Encoder, width: number, height: number, timeLimit: number, stop: AbortSignal): Promise<Buffer> {
  const period = 1000 / host.device.options.refreshRate;
  let deadline = Infinity;
  let key: string | undefined;
  let frame: Buffer | undefined;
  // One picture buffer for the whole recording, written over for each frame once the encoder has taken the last one:
  // new memory for each was page faults on every picture.
  const picture = Buffer.allocUnsafe(width * height * 4);
  do {
    const started = performance.now();
    if (host.screen.key() !== key) {
      key = host.screen.key();
      frame = letterbox(host.screen.canvas(), width, height, picture);
      await encoder.frame(frame);
    }
    // The time limit runs from the first picture the encoder has taken, as a phone's recording begins once its encoder
    // runs. ffmpeg stamps a picture with the wall clock when it reads it: counted from before, a loaded machine's
    // ffmpeg that began reading late made a 2 s recording a 0.92 s file.
    if (deadline === Infinity) deadline = Date.now() + timeLimit * 1000;
    const wait = Math.min(period - (performance.now() - started), deadline - Date.now());
    await sleep(Math.max(1, wait), undefined, { signal: stop }).catch(() => undefined);
    // A still screen: nothing to look at until something changes, the clock turns a minute, or the time limit.
    if (key !== undefined && !stop.aborted) await host.screen.stillUntil(key, deadline - Date.now(), stop);
  } while (!stop.aborted && Date.now() < deadline);
  return frame!;
}

/** Where red, green and blue sit in a pixel read as one 32-bit word of RGBA bytes, on this machine's byte order. */
const [RED, GREEN, BLUE] = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1 ? [0, 8, 16] : [24, 16, 8];
/** Opaque black, RGBA: the bars around a letterboxed screen. */
const OPAQUE_BLACK = Buffer.from([0, 0, 0, 255]);

/** For each of n output pixels along an axis, the first and the end source pixel it covers: [a0, b0, a1, b1, ...]. */
function spans(n: number, size: number): Int32Array {
  const key = `${n}:${size}`;
  let found = spanCache.get(key);
  if (!found) {
    found = new Int32Array(2 * n);
    for (let i = 0; i < n; i++) {
      const a = Math.floor((i * size) / n);
      found[2 * i] = a;
      found[2 * i + 1] = Math.max(a + 1, Math.min(size, Math.floor(((i + 1) * size) / n)));
    }
    if (spanCache.size >= 16) spanCache.clear();
    spanCache.set(key, found);
  }
  return found;
}
/** The few sizes a recording uses (its video's, the screen's in each orientation): worked out once, not per picture. */
const spanCache = new Map<string, Int32Array>();

/**
 * The screen scaled to fit width x height, centred on black, as screenrecord's display projection shows a screen
 * whose orientation or shape differs from the video's. Each output pixel averages the source pixels it covers. Drawn
 * into `into` when given (width x height x 4 bytes), else into new memory; the screen's own canvas is never handed
 * out, since the screen draws its next picture over it.
 */
export function letterbox(canvas: Canvas, width: number, height: number, into?: Buffer): Buffer {
  const out = into ?? Buffer.allocUnsafe(width * height * 4);
  if (canvas.width === width && canvas.height === height) {
    canvas.data.copy(out);
    return out;
  }
  const scale = Math.min(width / canvas.width, height / canvas.height);
  const w = Math.max(1, Math.round(canvas.width * scale));
  const h = Math.max(1, Math.round(canvas.height * scale));
  const left = Math.floor((width - w) / 2);
  const top = Math.floor((height - h) / 2);
  // One native pass for the bars and every alpha byte; the picture is written over it below.
  out.fill(OPAQUE_BLACK);
  const columns = spans(w, canvas.width);
  const rows = spans(h, canvas.height);
  // Each source pixel read as one 32-bit word rather than three bytes: a third of the loads.
  const { buffer, byteOffset, length } = canvas.data;
  const src = byteOffset % 4 === 0 ? new Uint32Array(buffer, byteOffset, length / 4) : new Uint32Array(Uint8Array.from(canvas.data).buffer);
  const stride = canvas.width;
  for (let y = 0; y < h; y++) {
    const y0 = rows[2 * y]!;
    const y1 = rows[2 * y + 1]!;
    let o = ((top + y) * width + left) * 4;
    for (let x = 0; x < w; x++, o += 4) {
      const x0 = columns[2 * x]!;
      const x1 = columns[2 * x + 1]!;
      let r = 0;
      let g = 0;
      let b = 0;
      for (let row = y0 * stride, last = y1 * stride; row < last; row += stride) {
        for (let i = row + x0, end = row + x1; i < end; i++) {
          const pixel = src[i]!;
          r += (pixel >>> RED) & 0xff;
          g += (pixel >>> GREEN) & 0xff;
          b += (pixel >>> BLUE) & 0xff;
        }
      }
      const n = (y1 - y0) * (x1 - x0);
      out[o] = r / n;
      out[o + 1] = g / n;
      out[o + 2] = b / n;
    }
  }
  return out;
}
